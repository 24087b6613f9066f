/**
 * Finds the Temporal CLI, the command-line client that the cluster's setup (namespace, search
 * attributes) and some tests run (`temporal workflow show`, ...; the dev server is temporal-server
 * itself, scripts/temporal-dev-server.ts), fetching it only when missing:
 *   1. TEMPORAL_CLI_PATH, if set (it must exist);
 *   2. `temporal` on PATH;
 *   3. the cached one in $TEMPORAL_CLI_CACHE_DIR (default ~/.cache/delivery-orchestrator);
 *   4. otherwise the official release archive, downloaded from where the SDK's test server gets
 *      it and checked against its pinned SHA-256 (scripts/temporal-cli-download.ts), into that
 *      cache: Node is all a machine with internet access needs;
 *   5. only when the download fails, `go install github.com/temporalio/cli/cmd/temporal@v1.5.1`
 *      into that cache (later versions carry a `replace` directive that `go install` refuses).
 * `npm run temporal:ensure` runs this on its own and prints the path.
 */
import { spawn, spawnSync } from 'node:child_process';
import { accessSync, closeSync, constants, existsSync, mkdirSync, openSync, renameSync, rmSync, statSync, unlinkSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { downloadTemporalCli, type DownloadOptions } from './temporal-cli-download';

export const TEMPORAL_CLI_VERSION = 'v1.5.1';
const MODULE = `github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION}`;
const LOCK_STALE_MS = 30 * 60_000;

type Log = (line: string) => void;

/** Where the project's Go-built tools are cached (the CLI here, the server tools in scripts/cluster/tools.ts). */
export function toolCacheBase(env: NodeJS.ProcessEnv = process.env): string {
  return env.TEMPORAL_CLI_CACHE_DIR || join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'delivery-orchestrator');
}

export function temporalCliCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(toolCacheBase(env), `temporal-cli-${TEMPORAL_CLI_VERSION}`);
}

export function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

export function onPath(name: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir && isExecutable(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

/** The CLI if it is already here, without building anything. */
export function findTemporalCli(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.TEMPORAL_CLI_PATH) {
    if (!isExecutable(env.TEMPORAL_CLI_PATH)) throw new Error(`TEMPORAL_CLI_PATH=${env.TEMPORAL_CLI_PATH} is not an executable file`);
    return env.TEMPORAL_CLI_PATH;
  }
  const fromPath = onPath('temporal', env);
  if (fromPath) return fromPath;
  const cached = join(temporalCliCacheDir(env), 'temporal');
  return isExecutable(cached) ? cached : undefined;
}

/**
 * Returns a usable CLI path: found, else downloaded and verified (seconds), else built with Go
 * (several minutes). `download` overrides the download's checksums or platform (tests).
 */
export async function ensureTemporalCli(
  log: Log = (l) => console.error(l),
  env: NodeJS.ProcessEnv = process.env,
  download: Pick<DownloadOptions, 'sha256' | 'platform'> = {},
): Promise<string> {
  const found = findTemporalCli(env);
  if (found) return found;

  const dir = temporalCliCacheDir(env);
  mkdirSync(dir, { recursive: true });
  const target = join(dir, 'temporal');
  const lock = join(dir, '.build.lock');
  // One download or build at a time: a second caller (tests and `npm start` together) waits for the first.
  while (!tryLock(lock)) {
    if (isExecutable(target)) return target;
    log(`[temporal-cli] another download or build is running (${lock}); waiting...`);
    await sleep(5_000);
  }
  try {
    if (isExecutable(target)) return target;
    let downloadFailure: string;
    try {
      await downloadTemporalCli({ version: TEMPORAL_CLI_VERSION, target, workDir: dir, env, log, ...download });
      return target;
    } catch (err) {
      downloadFailure = (err as Error).message;
    }
    const go = onPath('go', env);
    if (!go) {
      throw new Error(
        `The Temporal CLI was not found, its download failed (${downloadFailure}), and Go is not installed to build it.\n` +
          '  Install one of them:\n' +
          '  - the Temporal CLI (https://docs.temporal.io/cli), on PATH or named by TEMPORAL_CLI_PATH, or\n' +
          `  - Go 1.23 or later, and this project builds ${MODULE} itself.`,
      );
    }
    log(`[temporal-cli] download failed: ${downloadFailure}; building with Go instead`);
    const staging = join(dir, `.staging-${process.pid}`);
    rmSync(staging, { recursive: true, force: true });
    mkdirSync(staging, { recursive: true });
    log(`[temporal-cli] building ${MODULE} with ${go} into ${dir} (first time only; takes several minutes)`);
    await goInstall(go, staging, env, log);
    renameSync(join(staging, 'temporal'), target);
    rmSync(staging, { recursive: true, force: true });
    log(`[temporal-cli] built ${target}`);
    return target;
  } finally {
    unlinkSync(lock);
  }
}

/** Takes a build lock file; a lock older than LOCK_STALE_MS is a dead builder's and is removed. */
export function tryLock(lock: string): boolean {
  try {
    closeSync(openSync(lock, 'wx'));
    return true;
  } catch {
    try {
      if (Date.now() - statSync(lock).mtimeMs > LOCK_STALE_MS) unlinkSync(lock); // a dead builder's lock
    } catch {
      /* raced with its owner removing it */
    }
    return false;
  }
}

function goInstall(go: string, gobin: string, env: NodeJS.ProcessEnv, log: Log): Promise<void> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const child = spawn(go, ['install', '-v', MODULE], {
      env: { ...env, GOBIN: gobin },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let packages = 0;
    let tail: string[] = [];
    const onLine = (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n').filter(Boolean)) {
        tail = [...tail.slice(-19), line];
        if (line.startsWith('go: downloading')) continue;
        packages += 1;
      }
    };
    child.stdout.on('data', onLine);
    child.stderr.on('data', onLine);
    const ticker = setInterval(() => {
      log(`[temporal-cli] still building: ${Math.round((Date.now() - started) / 1000)} s, ${packages} packages compiled`);
    }, 15_000);
    child.on('error', (err) => {
      clearInterval(ticker);
      reject(err);
    });
    child.on('exit', (code) => {
      clearInterval(ticker);
      if (code === 0 && existsSync(join(gobin, 'temporal'))) resolve();
      else reject(new Error(`go install ${MODULE} failed (exit ${code}). Last output:\n${tail.join('\n')}`));
    });
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export function temporalCliVersion(cli: string): string {
  const r = spawnSync(cli, ['--version'], { encoding: 'utf8' });
  return (r.stdout || r.stderr).trim();
}

if (require.main === module) {
  ensureTemporalCli()
    .then((path) => console.log(path))
    .catch((err: Error) => {
      console.error(err.message);
      process.exit(1);
    });
}
