/**
 * The Temporal server tools of the local dev server (`npm start`, the `temporal` test project:
 * scripts/temporal-dev-server.ts) and of the cluster (`npm run cluster`, the `cluster` test
 * project), found in the cache or built with Go once, the way scripts/temporal-cli.ts builds the CLI:
 *   - temporal-server and temporal-sql-tool (go.temporal.io/server v1.32.1, the newest that builds
 *     with this machine's Go 1.26.8: v1.32.2 needs Go 1.26.10) with the module's PostgreSQL schema
 *     files beside them, in $TEMPORAL_CLI_CACHE_DIR/temporal-server-v1.32.1 (default
 *     ~/.cache/delivery-orchestrator);
 *   - temporal-ui-server (github.com/temporalio/ui-server/v2 v2.55.0, the newest that builds with
 *     Go 1.26.8: v2.56.0 needs Go 1.26.9, v2.56.1 to v2.58.1 Go 1.26.10) in .../temporal-ui-server-v2.55.0.
 * TEMPORAL_SERVER_TOOLS_DIR names a directory that already holds all of them (e.g. from an image).
 *
 * The server this project ran before, PREVIOUS_TEMPORAL_SERVER_VERSION, is built the same way on
 * request only (ensureClusterServerTools, `npm run cluster:tools -- v1.29.1`): the schema upgrade
 * test (test/cluster/schema-upgrade.test.ts) runs a cluster on it and upgrades that cluster.
 */
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, renameSync, rmSync, unlinkSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { isExecutable, onPath, toolCacheBase, tryLock } from '../temporal-cli';

export const TEMPORAL_SERVER_VERSION = 'v1.32.1';
export const TEMPORAL_UI_SERVER_VERSION = 'v2.55.0';
/** The server version this project ran before TEMPORAL_SERVER_VERSION (docs/deploying.md, "Upgrading Temporal"). */
export const PREVIOUS_TEMPORAL_SERVER_VERSION = 'v1.29.1';
const SERVER_MODULE = 'go.temporal.io/server';
const UI_MODULE = 'github.com/temporalio/ui-server/v2';

type Log = (line: string) => void;

/** What a cluster of one server version runs on (scripts/cluster/temporal-cluster.ts); the Web UI server is optional there. */
export interface ClusterServerTools {
  /** The server version they are of, e.g. `v1.32.1`. */
  version: string;
  server: string;
  sqlTool: string;
  uiServer?: string;
  /** schema/postgresql/v12 of the server module: temporal/ and visibility/, each with versioned/. */
  postgresSchemaDir: string;
}

export interface ServerTools extends ClusterServerTools {
  uiServer: string;
  /** schema/sqlite/v3 of the server module: what the dev server's SQLite file is upgraded with (scripts/dev-server-data.ts). */
  sqliteSchemaDir: string;
}

export function serverToolsDirs(env: NodeJS.ProcessEnv = process.env): { server: string; ui: string } {
  if (env.TEMPORAL_SERVER_TOOLS_DIR) return { server: env.TEMPORAL_SERVER_TOOLS_DIR, ui: env.TEMPORAL_SERVER_TOOLS_DIR };
  const base = toolCacheBase(env);
  return { server: join(base, `temporal-server-${TEMPORAL_SERVER_VERSION}`), ui: join(base, `temporal-ui-server-${TEMPORAL_UI_SERVER_VERSION}`) };
}

/** Go on PATH, or where these machines install it (a non-login shell may not have it on PATH). */
export function findGo(env: NodeJS.ProcessEnv): string | undefined {
  return onPath('go', env) ?? (isExecutable('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : undefined);
}

function toolsIn(dirs: { server: string; ui: string }): ServerTools {
  return {
    version: TEMPORAL_SERVER_VERSION,
    server: join(dirs.server, 'temporal-server'),
    sqlTool: join(dirs.server, 'temporal-sql-tool'),
    uiServer: join(dirs.ui, 'temporal-ui-server'),
    postgresSchemaDir: join(dirs.server, 'schema', 'postgresql', 'v12'),
    sqliteSchemaDir: join(dirs.server, 'schema', 'sqlite', 'v3'),
  };
}

function complete(t: ServerTools): boolean {
  return isExecutable(t.server) && isExecutable(t.sqlTool) && isExecutable(t.uiServer) && existsSync(join(t.postgresSchemaDir, 'temporal', 'versioned')) && existsSync(join(t.sqliteSchemaDir, 'visibility', 'schema.sql'));
}

/** The tools if they are all here already, without building anything. */
export function findServerTools(env: NodeJS.ProcessEnv = process.env): ServerTools | undefined {
  const t = toolsIn(serverToolsDirs(env));
  return complete(t) ? t : undefined;
}

/** Returns the tools, building what is missing with Go into the cache (minutes, the first time). */
export async function ensureServerTools(log: Log = (l) => console.error(l), env: NodeJS.ProcessEnv = process.env): Promise<ServerTools> {
  const dirs = serverToolsDirs(env);
  const tools = toolsIn(dirs);
  if (complete(tools)) return tools;
  if (env.TEMPORAL_SERVER_TOOLS_DIR) {
    throw new Error(`TEMPORAL_SERVER_TOOLS_DIR=${env.TEMPORAL_SERVER_TOOLS_DIR} must hold temporal-server, temporal-sql-tool, temporal-ui-server, schema/postgresql/v12 and schema/sqlite/v3`);
  }
  const go = findGo(env);
  if (!go) {
    throw new Error(
      'The Temporal server tools are not built yet and Go is not installed to build them.\n' +
        `  Install Go 1.26.8 or later (this project then builds ${SERVER_MODULE} ${TEMPORAL_SERVER_VERSION} and ${UI_MODULE} ${TEMPORAL_UI_SERVER_VERSION}),\n` +
        '  or set TEMPORAL_SERVER_TOOLS_DIR to a directory holding temporal-server, temporal-sql-tool, temporal-ui-server, schema/postgresql/v12 and schema/sqlite/v3.',
    );
  }
  await withLock(dirs.server, log, () => buildServer(go, dirs.server, TEMPORAL_SERVER_VERSION, env, log));
  await withLock(dirs.ui, log, async () => {
    if (!isExecutable(tools.uiServer)) {
      await build(go, dirs.ui, [`${UI_MODULE}/cmd/server@${TEMPORAL_UI_SERVER_VERSION}`], { server: 'temporal-ui-server' }, env, log);
    }
  });
  return tools;
}

/**
 * temporal-server and temporal-sql-tool of any server version with its PostgreSQL schema files, cached
 * in $TEMPORAL_CLI_CACHE_DIR/temporal-server-<version> and built with Go when missing, as
 * ensureServerTools builds the product's (for it, with TEMPORAL_SERVER_TOOLS_DIR, that one is used).
 * No Web UI server: a cluster runs without it.
 */
export async function ensureClusterServerTools(version: string, log: Log = (l) => console.error(l), env: NodeJS.ProcessEnv = process.env): Promise<ClusterServerTools> {
  if (version === TEMPORAL_SERVER_VERSION) return ensureServerTools(log, env);
  const dir = join(toolCacheBase(env), `temporal-server-${version}`);
  const { server, sqlTool, postgresSchemaDir } = toolsIn({ server: dir, ui: dir });
  const tools = { version, server, sqlTool, postgresSchemaDir };
  if (isExecutable(server) && isExecutable(sqlTool) && existsSync(join(postgresSchemaDir, 'temporal', 'versioned'))) return tools;
  const go = findGo(env);
  if (!go) throw new Error(`The Temporal server ${version} tools are not built yet and Go is not installed to build them (Go 1.26.8 or later builds ${SERVER_MODULE} ${version}).`);
  await withLock(dir, log, () => buildServer(go, dir, version, env, log));
  return tools;
}

/** What is missing in `dir` of one server version's temporal-server, temporal-sql-tool and schema files, built or copied from its module. */
async function buildServer(go: string, dir: string, version: string, env: NodeJS.ProcessEnv, log: Log): Promise<void> {
  const tools = toolsIn({ server: dir, ui: dir });
  if (!isExecutable(tools.server) || !isExecutable(tools.sqlTool)) {
    await build(go, dir, [`${SERVER_MODULE}/cmd/server@${version}`, `${SERVER_MODULE}/cmd/tools/sql@${version}`], { server: 'temporal-server', sql: 'temporal-sql-tool' }, env, log);
  }
  if (!existsSync(join(tools.postgresSchemaDir, 'temporal', 'versioned')) || !existsSync(join(tools.sqliteSchemaDir, 'visibility', 'schema.sql'))) {
    // The schema files ship in the module, not in the binaries: keep a copy beside them.
    const moduleDir = goModuleDir(go, `${SERVER_MODULE}@${version}`, env);
    rmSync(join(dir, 'schema'), { recursive: true, force: true });
    cpSync(join(moduleDir, 'schema', 'postgresql', 'v12'), tools.postgresSchemaDir, { recursive: true });
    cpSync(join(moduleDir, 'schema', 'sqlite', 'v3'), tools.sqliteSchemaDir, { recursive: true });
  }
}

export async function withLock(dir: string, log: Log, fn: () => Promise<void>): Promise<void> {
  mkdirSync(dir, { recursive: true });
  const lock = join(dir, '.build.lock');
  // One build at a time: a second caller (tests and `npm run cluster` together) waits for the first.
  while (!tryLock(lock)) {
    log(`[cluster-tools] another build is running (${lock}); waiting...`);
    await new Promise((r) => setTimeout(r, 5_000));
  }
  try {
    await fn();
  } finally {
    unlinkSync(lock);
  }
}

export function goModuleDir(go: string, module: string, env: NodeJS.ProcessEnv): string {
  const r = spawnSync(go, ['mod', 'download', '-json', module], { env, encoding: 'utf8', cwd: homedir() });
  const dir = r.status === 0 ? (JSON.parse(r.stdout) as { Dir?: string }).Dir : undefined;
  if (!dir) throw new Error(`go mod download ${module} failed: ${(r.stderr || r.stdout).slice(-2000)}`);
  return dir;
}

/** `go install` of the packages into a staging dir, then renamed into `dir` by `names` (built name → cached name). */
function build(go: string, dir: string, packages: string[], names: Record<string, string>, env: NodeJS.ProcessEnv, log: Log): Promise<void> {
  // From the home directory: outside any module, so `go install pkg@version` builds exactly that version.
  return goBuild(go, dir, { args: ['install', '-v', ...packages], cwd: homedir(), what: packages.join(' ') }, names, env, log);
}

/**
 * Runs `go <args>` in `cwd` with GOBIN set to a staging dir (`args` may name it, for `go build -o`), then
 * renames the built files into `dir` by `names` (built name → cached name).
 */
export function goBuild(go: string, dir: string, cmd: { args: string[] | ((staging: string) => string[]); cwd: string; what: string }, names: Record<string, string>, env: NodeJS.ProcessEnv, log: Log): Promise<void> {
  const staging = join(dir, `.staging-${process.pid}`);
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  const what = cmd.what;
  log(`[cluster-tools] building ${what} with ${go} into ${dir} (first time only; takes minutes)`);
  const args = typeof cmd.args === 'function' ? cmd.args(staging) : cmd.args;
  return new Promise<void>((resolve, reject) => {
    const started = Date.now();
    const child = spawn(go, args, { env: { ...env, GOBIN: staging }, cwd: cmd.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let compiled = 0;
    let tail: string[] = [];
    const onLine = (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n').filter(Boolean)) {
        tail = [...tail.slice(-19), line];
        if (!line.startsWith('go: downloading')) compiled += 1;
      }
    };
    child.stdout.on('data', onLine);
    child.stderr.on('data', onLine);
    const ticker = setInterval(() => log(`[cluster-tools] still building: ${Math.round((Date.now() - started) / 1000)} s, ${compiled} packages compiled`), 15_000);
    child.on('error', (err) => {
      clearInterval(ticker);
      reject(err);
    });
    child.on('exit', (code) => {
      clearInterval(ticker);
      const missing = Object.keys(names).filter((n) => !existsSync(join(staging, n)));
      if (code !== 0 || missing.length > 0) return reject(new Error(`go ${args[0]} ${what} failed (exit ${code}). Last output:\n${tail.join('\n')}`));
      for (const [built, cached] of Object.entries(names)) renameSync(join(staging, built), join(dir, cached));
      rmSync(staging, { recursive: true, force: true });
      log(`[cluster-tools] built in ${Math.round((Date.now() - started) / 1000)} s`);
      resolve();
    });
  });
}

// `npm run cluster:tools` builds the product's tools; `npm run cluster:tools -- v1.29.1` that version's server tools.
if (require.main === module) {
  const version = process.argv[2];
  (version ? ensureClusterServerTools(version) : ensureServerTools())
    .then((t) => console.log(JSON.stringify(t, null, 2)))
    .catch((err: Error) => {
      console.error(err.message);
      process.exit(1);
    });
}
