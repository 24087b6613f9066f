/**
 * Bad input for the cluster's provisioning (scripts/cluster/, what `npm run cluster` runs): it
 * refuses to start with a message that says what is wrong, and leaves nothing running, when a
 * port is taken, when PostgreSQL cannot start, and when the database's schema is newer than the
 * server.
 */
import { execFile } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ensureSchema } from '../../scripts/cluster/schema';
import { freeClusterPorts, TemporalCluster } from '../../scripts/cluster/temporal-cluster';
import { ensureServerTools, TEMPORAL_SERVER_VERSION, type ServerTools } from '../../scripts/cluster/tools';
import { ensureTemporalCli } from '../../scripts/temporal-cli';
import { freePort } from '../../scripts/temporal-dev-server';

const run = promisify(execFile);
const ROOT = join(__dirname, '../..');
let tools: ServerTools;
let cli: string;
const dirs: string[] = [];
const logs: string[] = [];

beforeAll(async () => {
  cli = await ensureTemporalCli((l) => process.stderr.write(`${l}\n`));
  tools = await ensureServerTools((l) => process.stderr.write(`${l}\n`));
}, 600_000);
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function dataDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'cluster-refusal-'));
  chmodSync(d, 0o755);
  dirs.push(d);
  return d;
}

async function cluster(dir = dataDir(), ports?: Awaited<ReturnType<typeof freeClusterPorts>>): Promise<TemporalCluster> {
  return new TemporalCluster({ tools, cli, dataDir: dir, ports: ports ?? (await freeClusterPorts(false)), log: (l) => logs.push(l), output: (n, l) => logs.push(`[${n}] ${l}`) });
}

async function listen(port = 0): Promise<Server> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(port, '127.0.0.1', r));
  return srv;
}

test('npm run cluster refuses to start when its Temporal port is taken, naming the port and its use', async () => {
  const port = await freePort();
  const srv = await listen(port);
  try {
    const started = Date.now();
    const failed = await run(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts/cluster.ts')], { cwd: ROOT, env: { ...process.env, TEMPORAL_PORT: String(port) }, encoding: 'utf8', timeout: 120_000 }).then(
      () => undefined,
      (e: { code: number; stderr: string; stdout: string }) => e,
    );
    expect(failed?.code).toBe(1);
    expect(failed?.stderr).toContain(`127.0.0.1:${port} (Temporal frontend (gRPC))`);
    expect(failed?.stderr).toMatch(/already in use/);
    // It checks before building, installing or starting anything.
    expect(Date.now() - started).toBeLessThan(60_000);
  } finally {
    srv.close();
  }
}, 150_000);

test('the provisioning refuses a taken membership port before it starts PostgreSQL', async () => {
  const ports = await freeClusterPorts(false);
  const srv = await listen(ports.services['matching-2']!.membership);
  try {
    const c = await cluster(undefined, ports);
    await expect(c.start()).rejects.toThrow(`127.0.0.1:${ports.services['matching-2']!.membership} (Temporal matching-2 (membership))`);
    expect(c.postgres.running).toBe(false);
  } finally {
    srv.close();
  }
});

test('refuses with PostgreSQL’s own reason when PostgreSQL cannot start, and leaves nothing running', async () => {
  const dir = dataDir();
  // A data directory from a PostgreSQL major version this one cannot read.
  const pgdata = join(dir, 'postgresql');
  mkdirSync(pgdata, { mode: 0o700 });
  writeFileSync(join(pgdata, 'PG_VERSION'), '9.6\n');
  writeFileSync(join(pgdata, 'postgresql.conf'), '');
  if (process.getuid?.() === 0) {
    // As root, PostgreSQL runs as the postgres user (scripts/cluster/postgres.ts): give it the directory.
    const owner = Number((await run('id', ['-u', 'postgres'])).stdout.trim());
    const group = Number((await run('id', ['-g', 'postgres'])).stdout.trim());
    chownSync(pgdata, owner, group);
    for (const f of ['PG_VERSION', 'postgresql.conf']) chownSync(join(pgdata, f), owner, group);
  }
  const c = await cluster(dir);
  const err = (await c.start().catch((e: Error) => e)) as Error;
  expect(err.message).toMatch(/^PostgreSQL could not start \(data .*postgresql, port \d+\)/);
  expect(err.message).toMatch(/database files are incompatible with server/);
  expect(c.postgres.running).toBe(false);
});

test('refuses a database whose schema is newer than the server, saying which versions', async () => {
  const dir = dataDir();
  const c = await cluster(dir);
  // The real setup first (PostgreSQL and the schema tool), then a newer server's mark on it.
  await c.postgres.start();
  const password = readFileSync(join(dir, 'postgres-password'), 'utf8').trim();
  ensureSchema({ sqlTool: tools.sqlTool, schemaDir: tools.postgresSchemaDir, pg: c.postgres, user: 'temporal', password, log: () => undefined, serverVersion: TEMPORAL_SERVER_VERSION });
  expect(c.postgres.query('temporal', "UPDATE schema_version SET curr_version = '99.0' WHERE db_name = 'temporal'").ok).toBe(true);
  await c.postgres.stop();

  const err = (await c.start().catch((e: Error) => e)) as Error;
  const server = TEMPORAL_SERVER_VERSION.replace(/\./g, '\\.');
  expect(err.message).toMatch(new RegExp(`^The temporal database's schema is version 99\\.0, newer than Temporal server ${server} knows \\(1\\.\\d+\\)`));
  expect(c.postgres.running).toBe(false);
  expect(logs.filter((l) => /^\[(frontend|history|matching)/.test(l))).toEqual([]);
}, 120_000);
