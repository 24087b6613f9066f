/**
 * Downloads the official Temporal CLI release archive, as the SDK's own test server does
 * (sdk-core `ephemeral_server`: `GET https://temporal.download/cli/<version>?arch=&platform=&format=`
 * answers `{ archiveUrl, fileToExtract }`), and accepts it only when its SHA-256 is the one pinned
 * here for that release and platform. The SDK checks no digest; a pinned one means neither the
 * download service, a mirror nor anything in between can hand over another binary.
 *
 * TEMPORAL_CLI_DOWNLOAD_URL replaces the service's address (a mirror that answers the same
 * request or serves `<url>/archive/<version>?platform=&arch=`; the tests' local server); `off`
 * skips the download.
 */
import { createHash } from 'node:crypto';
import { chmodSync, closeSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { EnvHttpProxyAgent, fetch } from 'undici';
import { z } from 'zod';

export const DEFAULT_DOWNLOAD_URL = 'https://temporal.download/cli';

/**
 * SHA-256 of `temporal_cli_<version>_<platform>_<arch>.tar.gz`, the release archives published at
 * github.com/temporalio/cli/releases (their checksums file is `temporal_cli_1.5.1_checksums.txt`).
 * Read from Hermit's package manifest for the CLI (cashapp/hermit-packages, temporal-cli.hcl), which
 * pins each archive's digest for its own installs; three of them also match a second, independent
 * manifest (no internet access on the machine they were pinned from). A new version needs its four lines from the release's checksums file.
 */
export const PINNED_SHA256: Record<string, Record<string, string>> = {
  'v1.5.1': {
    linux_amd64: 'ddc95e08b0b076efd4ea9733a3f488eb7d2be875f8834e616cd2a37358b4852d',
    linux_arm64: 'bd1b0db9f18b051026de8bf6cc1505f2510f14bbb7a8b9a4a91fff46c77454f5',
    darwin_amd64: 'bbb73e2a31135abe50a1f1cdb35030c42961df618e8ce9c60ae89f201540c5d9',
    darwin_arm64: 'cca01b7ea35ad56e2a328d9ae596bf716bd22313ef63c7a761c88354457c2415',
  },
};

/** Unreachable hosts (a machine without internet, CI) fail within this, not the OS's minutes. */
const CONNECT_TIMEOUT_MS = 5_000;
const HEADERS_TIMEOUT_MS = 15_000;
/** Between two chunks of the archive; a slow but moving download is fine. */
const BODY_TIMEOUT_MS = 30_000;
/** The real archives are a few tens of MB; anything far larger is not one. */
const MAX_ARCHIVE_BYTES = 200 * 1024 * 1024;

const DownloadInfoSchema = z.object({
  archiveUrl: z.string().refine((u) => /^https?:\/\//.test(u), 'must be an http(s) URL'),
  // A file name inside the archive, nothing that reaches out of the directory it is extracted to.
  fileToExtract: z.string().regex(/^[A-Za-z0-9._-]+$/, 'must be a plain file name').refine((f) => f !== '.' && f !== '..', 'must be a plain file name'),
});

/** The release's names for this machine; undefined where the project does not run. */
export function releasePlatform(platform: string = process.platform, arch: string = process.arch): { platform: string; arch: string } | undefined {
  const p = platform === 'linux' ? 'linux' : platform === 'darwin' ? 'darwin' : undefined;
  const a = arch === 'x64' ? 'amd64' : arch === 'arm64' ? 'arm64' : undefined;
  return p && a ? { platform: p, arch: a } : undefined;
}

export class DownloadRefusedError extends Error {
  override name = 'DownloadRefusedError';
}

export interface DownloadOptions {
  version: string;
  /** Where the verified CLI is put (the cache's `temporal`). */
  target: string;
  /** Scratch space next to the target, so the final move is a rename. */
  workDir: string;
  env?: NodeJS.ProcessEnv;
  /** Digests by `<platform>_<arch>`; the pinned ones of `version` unless given. */
  sha256?: Record<string, string>;
  platform?: { platform: string; arch: string };
  log?: (line: string) => void;
}

/** Downloads, verifies and installs the CLI at `target`; throws with the reason when it cannot. */
export async function downloadTemporalCli(o: DownloadOptions): Promise<void> {
  const env = o.env ?? process.env;
  const base = (env.TEMPORAL_CLI_DOWNLOAD_URL || DEFAULT_DOWNLOAD_URL).replace(/\/+$/, '');
  if (base === 'off') throw new DownloadRefusedError('downloads are off (TEMPORAL_CLI_DOWNLOAD_URL=off)');
  const where = o.platform ?? releasePlatform();
  if (!where) throw new DownloadRefusedError(`no release archive for ${process.platform}/${process.arch}`);
  const key = `${where.platform}_${where.arch}`;
  const expected = (o.sha256 ?? PINNED_SHA256[o.version])?.[key];
  if (!expected) throw new DownloadRefusedError(`no pinned checksum for the ${o.version} ${key} archive`);

  const dispatcher = new EnvHttpProxyAgent({ connect: { timeout: CONNECT_TIMEOUT_MS }, headersTimeout: HEADERS_TIMEOUT_MS, bodyTimeout: BODY_TIMEOUT_MS });
  const archive = join(o.workDir, `.download-${process.pid}.tar.gz`);
  const staging = join(o.workDir, `.extract-${process.pid}`);
  try {
    o.log?.(`[temporal-cli] downloading the Temporal CLI ${o.version} for ${where.platform}/${where.arch} (via ${base})`);
    const { archiveUrl, fileToExtract, asked } = await locateArchive(base, o.version, where, dispatcher);
    const actual = await fetchToFile(archiveUrl, archive, dispatcher).catch((err: Error) => Promise.reject(asked ? new Error(`${asked}; ${err.message}`) : err));
    if (actual !== expected) {
      throw new DownloadRefusedError(`refused ${archiveUrl}: its sha256 is ${actual}, the ${o.version} ${key} release archive's is ${expected}`);
    }

    rmSync(staging, { recursive: true, force: true });
    mkdirSync(staging, { recursive: true });
    const tar = spawnSync('tar', ['-xzf', archive, '-C', staging, '--', fileToExtract], { encoding: 'utf8' });
    if (tar.error || tar.status !== 0) throw new Error(`cannot extract ${fileToExtract} from the archive: ${tar.error?.message ?? tar.stderr.trim()}`);
    chmodSync(join(staging, fileToExtract), 0o755);
    renameSync(join(staging, fileToExtract), o.target);
    o.log?.(`[temporal-cli] verified (sha256 ${actual.slice(0, 16)}…) and cached ${o.target}`);
  } finally {
    rmSync(archive, { force: true });
    rmSync(staging, { recursive: true, force: true });
    await dispatcher.close().catch(() => undefined);
  }
}

/**
 * Where the archive is: the SDK's question first; where the service answers it with an error or
 * something else than `{ archiveUrl, fileToExtract }` (a version it does not know by that name, a
 * mirror that only holds archives), the archive address the CLI's install instructions give,
 * `<base>/archive/<version>?platform=&arch=`. Either way the pinned digest decides. An unreachable
 * service is not asked twice. `asked` says why the first answer was not used.
 */
async function locateArchive(
  base: string,
  version: string,
  where: { platform: string; arch: string },
  dispatcher: EnvHttpProxyAgent,
): Promise<{ archiveUrl: string; fileToExtract: string; asked?: string }> {
  const infoUrl = `${base}/${encodeURIComponent(version)}?${new URLSearchParams({ arch: where.arch, platform: where.platform, format: 'tar.gz' })}`;
  const res = await fetch(infoUrl, { dispatcher }).catch((err: unknown) => Promise.reject(networkError(infoUrl, err)));
  let asked: string;
  if (res.ok) {
    const parsed = DownloadInfoSchema.safeParse(await res.json().catch(() => undefined));
    if (parsed.success) return parsed.data;
    asked = `${infoUrl} did not answer { archiveUrl, fileToExtract } (${parsed.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ')})`;
  } else {
    await res.body?.cancel();
    asked = `${infoUrl} answered ${res.status}`;
  }
  const archiveUrl = `${base}/archive/${encodeURIComponent(version)}?${new URLSearchParams({ platform: where.platform, arch: where.arch })}`;
  return { archiveUrl, fileToExtract: 'temporal', asked };
}

/** Streams the body into `file` and returns its SHA-256 (hex). */
async function fetchToFile(url: string, file: string, dispatcher: EnvHttpProxyAgent): Promise<string> {
  const res = await fetch(url, { dispatcher }).catch((err: unknown) => Promise.reject(networkError(url, err)));
  if (!res.ok || !res.body) {
    await res.body?.cancel();
    throw new Error(`${url} answered ${res.status}`);
  }
  const hash = createHash('sha256');
  const fd = openSync(file, 'w');
  let size = 0;
  try {
    for await (const chunk of res.body) {
      size += chunk.byteLength;
      if (size > MAX_ARCHIVE_BYTES) throw new DownloadRefusedError(`refused ${url}: larger than ${MAX_ARCHIVE_BYTES} bytes`);
      hash.update(chunk);
      writeSync(fd, chunk);
    }
  } finally {
    closeSync(fd);
  }
  return hash.digest('hex');
}

/** fetch's "fetch failed" with the cause that says why (ENOTFOUND, ECONNREFUSED, a timeout). */
function networkError(url: string, err: unknown): Error {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return new Error(`${new URL(url).origin} unreachable (${cause?.code ?? cause?.message ?? (err as Error).message})`);
}
