import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureTemporalCli, findTemporalCli, TEMPORAL_CLI_VERSION, temporalCliCacheDir } from '../../scripts/temporal-cli';
import { PINNED_SHA256, releasePlatform } from '../../scripts/temporal-cli-download';

function fakeExecutable(dir: string, name: string): string {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, name);
  writeFileSync(path, '#!/bin/sh\nexit 0\n');
  chmodSync(path, 0o755);
  return path;
}

describe('finding the Temporal CLI', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'temporal-cli-'));
  });

  it('prefers TEMPORAL_CLI_PATH, then PATH, then the cache', () => {
    const explicit = fakeExecutable(join(dir, 'explicit'), 'temporal');
    const onPath = fakeExecutable(join(dir, 'bin'), 'temporal');
    const cacheDir = join(dir, 'cache');
    const cached = fakeExecutable(temporalCliCacheDir({ TEMPORAL_CLI_CACHE_DIR: cacheDir }), 'temporal');
    expect(findTemporalCli({ TEMPORAL_CLI_PATH: explicit, PATH: join(dir, 'bin'), TEMPORAL_CLI_CACHE_DIR: cacheDir })).toBe(explicit);
    expect(findTemporalCli({ PATH: join(dir, 'bin'), TEMPORAL_CLI_CACHE_DIR: cacheDir })).toBe(onPath);
    expect(findTemporalCli({ PATH: join(dir, 'empty'), TEMPORAL_CLI_CACHE_DIR: cacheDir })).toBe(cached);
    expect(findTemporalCli({ PATH: join(dir, 'empty'), TEMPORAL_CLI_CACHE_DIR: join(dir, 'nothing') })).toBeUndefined();
  });

  it('says so when TEMPORAL_CLI_PATH names nothing usable', () => {
    expect(() => findTemporalCli({ TEMPORAL_CLI_PATH: join(dir, 'missing') })).toThrow(/TEMPORAL_CLI_PATH=.*is not an executable file/);
  });

  it('stops with a clear message when there is neither the CLI, nor a download, nor Go', async () => {
    const env = { PATH: join(dir, 'empty'), TEMPORAL_CLI_CACHE_DIR: join(dir, 'cache'), TEMPORAL_CLI_DOWNLOAD_URL: 'off' };
    await expect(ensureTemporalCli(() => undefined, env)).rejects.toThrow(
      /Temporal CLI was not found, its download failed \(downloads are off \(TEMPORAL_CLI_DOWNLOAD_URL=off\)\), and Go is not installed[\s\S]*Install one of them/,
    );
  });
});

describe('the release archive for this machine', () => {
  it('is named as the release names it, and only where the project runs', () => {
    expect(releasePlatform('linux', 'x64')).toEqual({ platform: 'linux', arch: 'amd64' });
    expect(releasePlatform('linux', 'arm64')).toEqual({ platform: 'linux', arch: 'arm64' });
    expect(releasePlatform('darwin', 'arm64')).toEqual({ platform: 'darwin', arch: 'arm64' });
    expect(releasePlatform('win32', 'x64')).toBeUndefined();
    expect(releasePlatform('linux', 'ia32')).toBeUndefined();
  });

  it('has a pinned SHA-256 for each platform of the version in use', () => {
    for (const key of ['linux_amd64', 'linux_arm64', 'darwin_amd64', 'darwin_arm64']) expect(PINNED_SHA256[TEMPORAL_CLI_VERSION]?.[key]).toMatch(/^[0-9a-f]{64}$/);
  });
});
