/**
 * Issue #27: without a Temporal CLI, `npm start` and the tests download the release archive the
 * way the SDK's test server does, accept it only with its pinned SHA-256, cache it, and build with
 * Go only when the download fails. Here a real HTTP server on 127.0.0.1 plays the download
 * service (TEMPORAL_CLI_DOWNLOAD_URL), serving a small archive made in the test; a fake `go` on
 * PATH stands for the build, so no test ever compiles the CLI.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureTemporalCli, TEMPORAL_CLI_VERSION, temporalCliCacheDir } from '../../scripts/temporal-cli';
import { freePort } from '../../scripts/temporal-dev-server';
import { PINNED_SHA256, releasePlatform } from '../../scripts/temporal-cli-download';
import { listenOnLoopback, type TestServer } from '../helpers/http';

const here = releasePlatform()!;
const ARCHIVE_NAME = `temporal_cli_1.5.1_${here.platform}_${here.arch}.tar.gz`;

let dir: string;
let archive: Buffer;
let archiveSha: string;
let server: TestServer;
let requests: string[];

function executable(path: string, text: string): void {
  writeFileSync(path, text);
  chmodSync(path, 0o755);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'temporal-cli-download-'));
  // A release archive in the release's shape: the `temporal` executable and a licence beside it.
  const release = join(dir, 'release');
  mkdirSync(release);
  executable(join(release, 'temporal'), '#!/bin/sh\necho "temporal version 1.5.1 (from the release archive)"\n');
  writeFileSync(join(release, 'LICENSE'), 'MIT\n');
  execFileSync('tar', ['-czf', join(dir, ARCHIVE_NAME), '-C', release, 'temporal', 'LICENSE']);
  archive = readFileSync(join(dir, ARCHIVE_NAME));
  archiveSha = createHash('sha256').update(archive).digest('hex');

  server = await listenOnLoopback((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    requests.push(url.pathname + url.search);
    if (url.pathname === `/cli/${TEMPORAL_CLI_VERSION}`) {
      res.writeHead(200, { 'content-type': 'application/json' });
      // As temporal.download answers: where the archive is, and which file in it is the CLI.
      res.end(JSON.stringify({ archiveUrl: `${server.url}/assets/${ARCHIVE_NAME}`, fileToExtract: 'temporal' }));
    } else if (url.pathname === `/assets/${ARCHIVE_NAME}`) {
      // Release assets are served through a redirect, as GitHub's are.
      res.writeHead(302, { location: `/objects/${ARCHIVE_NAME}` });
      res.end();
    } else if (url.pathname === `/objects/${ARCHIVE_NAME}` || (url.pathname === `/mirror/archive/${TEMPORAL_CLI_VERSION}` && url.search === `?platform=${here.platform}&arch=${here.arch}`)) {
      res.writeHead(200, { 'content-type': 'application/gzip', 'content-length': archive.length });
      res.end(archive);
    } else {
      res.writeHead(404);
      res.end();
    }
  });
});
beforeEach(() => {
  requests = [];
});
afterAll(() => server.close());

/** An environment with no CLI anywhere: its own cache, and PATH holding only `bin` (a fake `go` or nothing). */
function machine(name: string, { go }: { go: boolean }): { env: NodeJS.ProcessEnv; cache: string; log: string[] } {
  const bin = join(dir, name, 'bin');
  mkdirSync(bin, { recursive: true });
  if (go) {
    // `go install -v <module>` with GOBIN set, as the build calls it: leaves a recognisable CLI there.
    executable(join(bin, 'go'), '#!/bin/sh\nPATH=/usr/bin:/bin\necho "$@" > "$GOBIN/../go-args"\nprintf \'#!/bin/sh\\necho "temporal built with go"\\n\' > "$GOBIN/temporal"\nchmod 755 "$GOBIN/temporal"\n');
  }
  const cache = join(dir, name, 'cache');
  return { env: { PATH: bin, TEMPORAL_CLI_CACHE_DIR: cache, TEMPORAL_CLI_DOWNLOAD_URL: `${server.url}/cli` }, cache, log: [] };
}

const run = (cli: string) => execFileSync(cli, ['--version'], { encoding: 'utf8' }).trim();

describe('the Temporal CLI, downloaded where none is found', () => {
  it('downloads the archive, checks its SHA-256, caches the CLI and uses the cache from then on', async () => {
    const m = machine('good', { go: true });
    const cli = await ensureTemporalCli((l) => m.log.push(l), m.env, { sha256: { [`${here.platform}_${here.arch}`]: archiveSha } });

    expect(cli).toBe(join(temporalCliCacheDir(m.env), 'temporal'));
    expect(run(cli)).toBe('temporal version 1.5.1 (from the release archive)');
    // The SDK's request: the release for this platform, as a tar.gz; then the archive, through its redirect.
    expect(requests).toEqual([
      `/cli/${TEMPORAL_CLI_VERSION}?arch=${here.arch}&platform=${here.platform}&format=tar.gz`,
      `/assets/${ARCHIVE_NAME}`,
      `/objects/${ARCHIVE_NAME}`,
    ]);
    expect(m.log.join('\n')).toMatch(/verified \(sha256 [0-9a-f]{16}…\) and cached/);
    expect(existsSync(join(m.cache, 'temporal-cli-v1.5.1', 'go-args'))).toBe(false); // Go was not needed
    // Only the CLI is left in the cache: no archive, no extraction directory, no lock.
    expect(readdirSync(temporalCliCacheDir(m.env))).toEqual(['temporal']);

    requests = [];
    expect(await ensureTemporalCli((l) => m.log.push(l), m.env)).toBe(cli);
    expect(requests).toEqual([]);
  });

  it('takes the archive from the address of the install instructions where the service does not answer the SDK\'s question (a mirror)', async () => {
    const m = machine('mirror', { go: true });
    const cli = await ensureTemporalCli((l) => m.log.push(l), { ...m.env, TEMPORAL_CLI_DOWNLOAD_URL: `${server.url}/mirror` }, { sha256: { [`${here.platform}_${here.arch}`]: archiveSha } });
    expect(run(cli)).toBe('temporal version 1.5.1 (from the release archive)');
    expect(requests).toEqual([
      `/mirror/${TEMPORAL_CLI_VERSION}?arch=${here.arch}&platform=${here.platform}&format=tar.gz`, // 404 here
      `/mirror/archive/${TEMPORAL_CLI_VERSION}?platform=${here.platform}&arch=${here.arch}`,
    ]);
  });

  it('refuses an archive whose SHA-256 is not the release\'s, says so in one line, and builds with Go instead', async () => {
    const m = machine('tampered', { go: true });
    // The pinned checksums of the real release: the test's archive is not it.
    const pinned = PINNED_SHA256[TEMPORAL_CLI_VERSION]![`${here.platform}_${here.arch}`]!;
    const cli = await ensureTemporalCli((l) => m.log.push(l), m.env);

    expect(m.log.filter((l) => l.includes('download failed'))).toEqual([
      `[temporal-cli] download failed: refused ${server.url}/assets/${ARCHIVE_NAME}: its sha256 is ${archiveSha}, ` +
        `the ${TEMPORAL_CLI_VERSION} ${here.platform}_${here.arch} release archive's is ${pinned}; building with Go instead`,
    ]);
    expect(run(cli)).toBe('temporal built with go');
    expect(readFileSync(join(m.cache, 'temporal-cli-v1.5.1', 'go-args'), 'utf8').trim()).toBe(`install -v github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION}`);
    // The refused archive never became the CLI, and nothing of it is left behind.
    expect(readdirSync(temporalCliCacheDir(m.env)).sort()).toEqual(['go-args', 'temporal']);
  });

  it('falls back to Go when the download service cannot be reached (a machine without internet)', async () => {
    const m = machine('offline', { go: true });
    const closed = await freePort();
    const cli = await ensureTemporalCli((l) => m.log.push(l), { ...m.env, TEMPORAL_CLI_DOWNLOAD_URL: `http://127.0.0.1:${closed}/cli` });
    expect(m.log.filter((l) => l.includes('download failed'))).toEqual([
      `[temporal-cli] download failed: http://127.0.0.1:${closed} unreachable (ECONNREFUSED); building with Go instead`,
    ]);
    expect(run(cli)).toBe('temporal built with go');
  });

  it('names both ways out when the download fails and there is no Go', async () => {
    const m = machine('stuck', { go: false });
    await expect(ensureTemporalCli((l) => m.log.push(l), m.env)).rejects.toThrow(
      /^The Temporal CLI was not found, its download failed \(refused .*: its sha256 is [0-9a-f]{64}, .*\), and Go is not installed to build it\.\n {2}Install one of them/,
    );
    expect(existsSync(join(temporalCliCacheDir(m.env), 'temporal'))).toBe(false);
  });
});
