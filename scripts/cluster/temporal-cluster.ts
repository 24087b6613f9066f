/**
 * A Temporal cluster on this machine, as production runs one: PostgreSQL (./postgres.ts), the
 * schema set up with the server's schema tool (./schema.ts), then frontend, two history, two
 * matching and one worker service, each a separate `temporal-server start --service <name>`
 * process with its own gRPC and membership ports, all rendered from deploy/temporal-cluster.yaml
 * and reading deploy/temporal-dynamic-config.yaml. The `default` namespace and the project's
 * search attributes are registered with the Temporal CLI; the Web UI server is optional. Nexus
 * (the service `deliveries`, nexus/) works as the server needs it: the frontend's HTTP port
 * (deploy/temporal-cluster.yaml) and the callback settings in this cluster's dynamic config
 * (nexusDynamicConfig, scripts/temporal-server-config.ts).
 *
 * Used by `npm run cluster` (scripts/cluster.ts), the `cluster` test project and the limits bench.
 * Every process can be killed and started again on the same ports (the fault tests do).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { connectClient } from '../../temporal/client-connection';
import { DELIVERY_SEARCH_ATTRIBUTES } from '../../contract/search-attributes';
import { accepts, stopProcess } from '../temporal-dev-server';
import { dynamicConfigYaml, nexusDynamicConfig, uiServerArgs } from '../temporal-server-config';
import { Postgres, storedPassword } from './postgres';
import { ensureSchema } from './schema';
import type { ClusterServerTools } from './tools';
import type { Run, Supervisor } from '../supervisor';

const run = promisify(execFile);
export const ROOT = join(__dirname, '../..');
export const CLUSTER_CONFIG = join(ROOT, 'deploy', 'temporal-cluster.yaml');
export const DYNAMIC_CONFIG = join(ROOT, 'deploy', 'temporal-dynamic-config.yaml');

export type ServiceKind = 'frontend' | 'history' | 'matching' | 'worker';

/** The service processes: two history and two matching share the shards and task queues between them. */
export const SERVICE_PROCESSES: { name: string; service: ServiceKind }[] = [
  { name: 'matching-1', service: 'matching' },
  { name: 'matching-2', service: 'matching' },
  { name: 'history-1', service: 'history' },
  { name: 'history-2', service: 'history' },
  { name: 'frontend', service: 'frontend' },
  { name: 'worker', service: 'worker' },
];

/**
 * The order they start in, stage by stage (a stage's processes at once), for a start that
 * prints no error line:
 * - one process alone first: on a new database it writes the cluster metadata, and several at
 *   once race for it and the losers exit ("failed to initialize current cluster metadata");
 * - matching before history: a history process asks matching for the Nexus endpoints as it
 *   starts ("error from matching when initializing Nexus endpoint cache: Not enough hosts");
 * - the second matching process alone, then RING_SETTLE_MS: the Nexus endpoints table has one
 *   owner on the matching ring, and a history process that asks while the ring changes reaches a
 *   node that no longer thinks it owns it ("Matching node doesn't think it's the Nexus endpoints
 *   table owner", seen in CI when matching-2 and history-1 started together);
 * - one history process at a time, each stage until the shards stay with their owners
 *   (shardsSettled): two at once both acquire the same shards ("Couldn't acquire shard");
 * - the frontend and the worker service (which starts the system workflows at once) last: a
 *   request that reaches a shard while it moves fails ("Shard is owned by ... but not by ...").
 */
export const START_ORDER: string[][] = [['matching-1'], ['matching-2'], ['history-1'], ['history-2'], ['frontend', 'worker']];

/** The server's own figure for a ring change to reach every process (`system.ringpopApproximateMaxPropagationTime`, 3 s by default). */
const RING_SETTLE_MS = 3_000;

/**
 * The order they stop in: each before what it calls (the worker service polls the frontend, the
 * frontend calls history and matching, history calls matching), so that none logs errors about
 * a peer that is already gone.
 */
export const STOP_ORDER: string[][] = [['ui'], ['worker'], ['frontend'], ['history-1', 'history-2'], ['matching-1', 'matching-2']];

/**
 * Error lines a history process prints while it acquires its shards, on every start: a queue
 * reader asks a shard that is still being loaded and tries again. Within START_NOISE_MS of a
 * process's start they are kept for its crash message but not shown: on a healthy start an
 * `error` line must mean something.
 */
const START_NOISE = [/"msg":"Queue reader unable to retrieve tasks".*"error":"shard status unknown"/];
const START_NOISE_MS = 30_000;

/**
 * Error lines of a refusal the server itself retries, kept for a crash message but never shown:
 * its own workflow for a worker deployment version continues as new after each change (each task
 * queue a starting worker registers), and a registration that meets that moment is refused
 * ("workflow is closing", ResourceExhausted) and sent again: the server's deployment client counts
 * it retryable and logs it at debug level (service/worker/workerdeployment/util.go,
 * isRetryableUpdateError), while history's request log prints it as an error. Seen in CI when
 * the workers of a new version start; the version ends up with every queue.
 */
const SERVER_RETRIED = [/"wf-id":"temporal-sys-worker-deployment-version:[^"]*".*"error":"MultiOperation could not be executed: Update failed: workflow operation can not be applied because workflow is closing"/];

/**
 * A crash message keeps the last KEPT_CHARS of a process's output, each line cut to KEPT_LINE_CHARS:
 * the server's fatal line is JSON with its message and error first and a stack trace of several KB
 * last, so an uncut tail would show only the end of the stack, not what failed.
 */
const KEPT_CHARS = 6_000;
const KEPT_LINE_CHARS = 1_500;

function keptLines(text: string): string {
  return text.replace(/[^\n]+/g, (line) => (line.length > KEPT_LINE_CHARS ? `${line.slice(0, KEPT_LINE_CHARS)} …(${line.length - KEPT_LINE_CHARS} more characters)` : line));
}

export interface ClusterPorts {
  postgres: number;
  frontend: number;
  frontendHttp: number;
  frontendMembership: number;
  /** Per service process other than the frontend: gRPC and membership. */
  services: Record<string, { grpc: number; membership: number }>;
  /** The Web UI; undefined runs no UI server. */
  ui?: number;
}

/** The ports of `npm run cluster`: the frontend on 7233 and the UI on 8233, as `npm start`. */
export function defaultClusterPorts(): ClusterPorts {
  return {
    postgres: Number(process.env.CLUSTER_POSTGRES_PORT ?? 5433),
    frontend: Number(process.env.TEMPORAL_PORT ?? 7233),
    frontendHttp: 7243,
    frontendMembership: 6933,
    services: {
      'history-1': { grpc: 7234, membership: 6934 },
      'history-2': { grpc: 7244, membership: 6944 },
      'matching-1': { grpc: 7235, membership: 6935 },
      'matching-2': { grpc: 7245, membership: 6945 },
      worker: { grpc: 7239, membership: 6939 },
    },
    ui: Number(process.env.TEMPORAL_UI_PORT ?? 8233),
  };
}

/**
 * Free ports for everything (tests, benchmarks), all below 32768, out of Linux's ephemeral range
 * (32768–60999, `ip_local_port_range`): a port is chosen here and bound by its process up to a
 * minute later (PostgreSQL's setup, then the services in order), and meanwhile any outgoing
 * connection on the machine may be given an ephemeral port as its own; a frontend whose port was
 * taken so never answers. The membership ports must stay below 32768 anyway: the PostgreSQL schema
 * keeps them in a smallint column (cluster_membership.rpc_port).
 */
export async function freeClusterPorts(withUi = false): Promise<ClusterPorts> {
  const services: ClusterPorts['services'] = {};
  for (const p of SERVICE_PROCESSES) if (p.service !== 'frontend') services[p.name] = { grpc: await freeServicePort(), membership: await freeServicePort() };
  return { postgres: await freeServicePort(), frontend: await freeServicePort(), frontendHttp: await freeServicePort(), frontendMembership: await freeServicePort(), services, ui: withUi ? await freeServicePort() : undefined };
}

const handedOut = new Set<number>();

/** A free port in 20000–32767 (random, so parallel runs rarely pick the same one; never twice in one process). */
export async function freeServicePort(): Promise<number> {
  for (let tries = 0; tries < 200; tries++) {
    const port = 20_000 + Math.floor(Math.random() * 12_768);
    if (handedOut.has(port)) continue;
    const free = await new Promise<boolean>((resolve) => {
      const srv = createServer();
      srv.once('error', () => resolve(false));
      srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
    });
    if (free) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error('no free port found in 20000-32767 for a cluster process');
}

export interface ClusterOptions {
  /** The server version's tools (ensureServerTools; ensureClusterServerTools for another version); the Web UI needs uiServer. */
  tools: ClusterServerTools;
  /** The Temporal CLI (namespace and search attribute registration). */
  cli: string;
  /** Where PostgreSQL's data and the cluster's generated files live; reused by the next start. */
  dataDir: string;
  ports: ClusterPorts;
  /** Each service process's Prometheus /metrics port on 127.0.0.1, by process name (`frontend`, `history-1`, …); none: no metrics. */
  metricsPorts?: Record<string, number>;
  namespace?: string;
  /** The codec endpoint the Web UI decrypts payloads through. */
  codecEndpoint?: string;
  log: (line: string) => void;
  /** Every line the cluster's processes print, prefixed with the process name. */
  output?: (name: string, line: string) => void;
  /**
   * Restarts each process (PostgreSQL, every service, the UI server) when it exits on its own
   * (`npm run cluster`, the cluster tests); without it an exit is left alone (a benchmark).
   */
  supervisor?: Supervisor;
}

interface ServiceProcess {
  name: string;
  service: ServiceKind | 'ui';
  child: ChildProcess;
  /** How it ended: `SIGKILL`, `code 1`. */
  exited: Promise<string>;
  recent: string;
}

export class TemporalCluster {
  readonly namespace: string;
  readonly postgres: Postgres;
  readonly address: string;
  readonly uiUrl?: string;
  private readonly dbUser = 'temporal';
  private readonly dbPassword: string;
  private readonly processes = new Map<string, ServiceProcess>();
  /** deploy/temporal-dynamic-config.yaml plus this cluster's Nexus settings, which name its ports. */
  private readonly dynamicConfigFile: string;
  /** Each database's schema version as start() left it (`temporal`, `temporal_visibility`). */
  schemaVersions: Record<string, string> = {};

  constructor(readonly o: ClusterOptions) {
    this.namespace = o.namespace ?? 'default';
    this.address = `127.0.0.1:${o.ports.frontend}`;
    this.uiUrl = o.ports.ui ? `http://127.0.0.1:${o.ports.ui}` : undefined;
    mkdirSync(o.dataDir, { recursive: true });
    this.dbPassword = storedPassword(join(o.dataDir, 'postgres-password'), () => randomBytes(18).toString('base64url'));
    this.postgres = new Postgres({
      dataDir: join(o.dataDir, 'postgresql'),
      port: o.ports.postgres,
      user: this.dbUser,
      password: this.dbPassword,
      log: o.log,
      output: (line) => o.output?.('postgresql', line),
    });
    this.dynamicConfigFile = join(o.dataDir, 'temporal-dynamic-config.yaml');
    writeFileSync(this.dynamicConfigFile, `${readFileSync(DYNAMIC_CONFIG, 'utf8')}\n# Nexus, for this cluster's frontend HTTP port (scripts/cluster/temporal-cluster.ts).\n${dynamicConfigYaml(nexusDynamicConfig(o.ports.frontendHttp))}`);
  }

  /** Every port this cluster listens on, with what it is for. */
  portList(): { port: number; what: string }[] {
    return clusterPortList(this.o.ports);
  }

  /** Starts everything; on failure stops what it started and rejects with a message that says what went wrong. */
  async start(): Promise<void> {
    try {
      await assertPortsFree(this.portList());
      this.o.log(`[cluster] PostgreSQL on 127.0.0.1:${this.o.ports.postgres} (data ${this.postgres.dataDir})`);
      await this.supervised('postgresql', () => this.postgres.start());
      const versions = (this.schemaVersions = ensureSchema({
        sqlTool: this.o.tools.sqlTool,
        schemaDir: this.o.tools.postgresSchemaDir,
        pg: this.postgres,
        user: this.dbUser,
        password: this.dbPassword,
        log: this.o.log,
        serverVersion: this.o.tools.version,
      }));
      this.o.log(`[cluster] schema: ${Object.entries(versions).map(([db, v]) => `${db} ${v}`).join(', ')}`);
      this.o.log(`[cluster] starting ${SERVICE_PROCESSES.map((p) => p.name).join(', ')}...`);
      // In stages, each history stage until its shards settle (START_ORDER says why).
      for (const stage of START_ORDER) {
        await Promise.all(stage.map((name) => this.supervised(name, () => this.startService(name))));
        if (stage.some((name) => name.startsWith('history'))) await this.shardsSettled();
        if (stage.includes('matching-2')) await new Promise((r) => setTimeout(r, RING_SETTLE_MS));
      }
      await this.waitForFrontend(120_000);
      await this.registerNamespace();
      await this.registerSearchAttributes();
      if (this.o.ports.ui) await this.supervised('ui', () => this.startUi());
    } catch (err) {
      await this.stop();
      throw err;
    }
  }

  private env(name: string): NodeJS.ProcessEnv {
    const p = this.o.ports;
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      TEMPORAL_DB_HOST: '127.0.0.1',
      TEMPORAL_DB_PORT: String(p.postgres),
      TEMPORAL_DB_USER: this.dbUser,
      TEMPORAL_DB_PASSWORD: this.dbPassword,
      TEMPORAL_BIND_IP: '127.0.0.1',
      TEMPORAL_BROADCAST_ADDRESS: '127.0.0.1',
      TEMPORAL_DYNAMIC_CONFIG_FILE: this.dynamicConfigFile,
      TEMPORAL_FRONTEND_GRPC_PORT: String(p.frontend),
      TEMPORAL_FRONTEND_HTTP_PORT: String(p.frontendHttp),
      TEMPORAL_FRONTEND_MEMBERSHIP_PORT: String(p.frontendMembership),
    };
    const metrics = this.o.metricsPorts?.[name];
    if (metrics !== undefined) env.TEMPORAL_METRICS_ADDRESS = `127.0.0.1:${metrics}`;
    const own = p.services[name];
    const kind = SERVICE_PROCESSES.find((s) => s.name === name)!.service;
    if (own) {
      env[`TEMPORAL_${kind.toUpperCase()}_GRPC_PORT`] = String(own.grpc);
      env[`TEMPORAL_${kind.toUpperCase()}_MEMBERSHIP_PORT`] = String(own.membership);
    }
    return env;
  }

  /** Starts a process under the supervisor, if there is one. */
  private supervised(name: string, start: () => Promise<Run>): Promise<Run> {
    return this.o.supervisor ? this.o.supervisor.start({ name, start }) : start();
  }

  private spawnLogged(name: string, service: ServiceProcess['service'], command: string, args: string[], env: NodeJS.ProcessEnv): ServiceProcess {
    const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const proc: ServiceProcess = { name, service, child, recent: '', exited: new Promise((r) => child.once('exit', (code, signal) => r(signal ?? `code ${code}`))) };
    const started = Date.now();
    const onData = (chunk: Buffer) => {
      proc.recent = (proc.recent + keptLines(chunk.toString())).slice(-KEPT_CHARS);
      for (const line of chunk.toString().split('\n').filter(Boolean)) {
        if (Date.now() - started < START_NOISE_MS && START_NOISE.some((re) => re.test(line))) continue;
        if (SERVER_RETRIED.some((re) => re.test(line))) continue;
        this.o.output?.(name, line);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    this.processes.set(name, proc);
    return proc;
  }

  private static asRun(proc: ServiceProcess): Run {
    return { pid: proc.child.pid, exited: proc.exited, lastLines: () => proc.recent };
  }

  /** Starts (or starts again) one service process and waits until it listens. */
  async startService(name: string): Promise<Run> {
    const spec = SERVICE_PROCESSES.find((p) => p.name === name);
    if (!spec) throw new Error(`no cluster process named ${name}`);
    const args = ['--root', ROOT, '--config', 'deploy', '--env', 'temporal-cluster', '--allow-no-auth', 'start', '--service', spec.service];
    const proc = this.spawnLogged(name, spec.service, this.o.tools.server, args, this.env(name));
    // The worker service serves no gRPC of its own: it is up once it listens for membership.
    const port = spec.service === 'frontend' ? this.o.ports.frontend : spec.service === 'worker' ? this.o.ports.services[name]!.membership : this.o.ports.services[name]!.grpc;
    const deadline = Date.now() + 120_000;
    for (;;) {
      if (proc.child.exitCode !== null || proc.child.signalCode !== null) throw new Error(`Temporal ${name} exited while starting:\n${proc.recent.trim()}`);
      if (await accepts(port)) return TemporalCluster.asRun(proc);
      if (Date.now() > deadline) throw new Error(`Temporal ${name} did not listen on 127.0.0.1:${port} within 120 s:\n${proc.recent.trim()}`);
      await sleep(250);
    }
  }

  /**
   * Waits until the history shards stay with their owners: every acquisition of a shard raises
   * its range_id, so the shards table unchanged for 2 s means no shard is moving. A cluster that
   * does not settle within 20 s starts anyway (it only logs more while it settles).
   */
  private async shardsSettled(): Promise<void> {
    const deadline = Date.now() + 20_000;
    let last = '';
    let since = Date.now();
    while (Date.now() < deadline) {
      const { ok, out } = this.postgres.query('temporal', "SELECT count(*) || ':' || coalesce(string_agg(shard_id || '@' || range_id, ',' ORDER BY shard_id), '') FROM shards");
      if (!ok || out !== last) [last, since] = [out, Date.now()];
      else if (!out.startsWith('0:') && Date.now() - since >= 2_000) return;
      await sleep(250);
    }
  }

  /** Sends a signal to one process (SIGKILL by default) and waits until it is gone; a supervisor then starts it again. */
  async kill(name: string, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const proc = this.processes.get(name);
    if (!proc) throw new Error(`no cluster process named ${name}`);
    proc.child.kill(signal);
    await proc.exited;
  }

  pidOf(name: string): number | undefined {
    return name === 'postgresql' ? this.postgres.pid : this.processes.get(name)?.child.pid;
  }

  /** Stops PostgreSQL (fast shutdown) and starts it again on the same data and port. */
  async restartPostgres(): Promise<void> {
    await this.postgres.stop();
    await this.postgres.start();
  }

  private async waitForFrontend(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last: string;
    for (;;) {
      let connection: Connection | undefined;
      try {
        connection = await connectClient({ address: this.address, connectTimeout: 2_000 });
        await connection.workflowService.describeNamespace({ namespace: 'temporal-system' });
        return;
      } catch (err) {
        last = (err as Error).message;
      } finally {
        await connection?.close().catch(() => undefined);
      }
      if (Date.now() > deadline) {
        const said = this.processes.get('frontend')?.recent.trim().slice(-1_500);
        throw new Error(`the Temporal frontend on ${this.address} did not answer within ${timeoutMs / 1000} s: ${last}${said ? `; its last output:\n${said}` : ''}`);
      }
      await sleep(500);
    }
  }

  private cli(args: string[]): Promise<{ stdout: string; stderr: string }> {
    return run(this.o.cli, [...args, '--address', this.address], { encoding: 'utf8', timeout: 60_000 });
  }

  private async registerNamespace(): Promise<void> {
    const described = await this.cli(['operator', 'namespace', 'describe', '--namespace', this.namespace]).then(
      () => true,
      () => false,
    );
    if (!described) {
      this.o.log(`[cluster] registering namespace ${this.namespace}`);
      await this.cli(['operator', 'namespace', 'create', '--namespace', this.namespace, '--retention', '72h']);
    }
    // Every frontend and history process learns of a new namespace from the database, a few seconds later.
    await eventually(() => this.cli(['operator', 'namespace', 'describe', '--namespace', this.namespace]), 60_000, `namespace ${this.namespace} to be served`);
  }

  private async registerSearchAttributes(): Promise<void> {
    const listed = async () => {
      const { stdout } = await this.cli(['operator', 'search-attribute', 'list', '--namespace', this.namespace, '--output', 'json']);
      return JSON.stringify(JSON.parse(stdout));
    };
    const existing = await eventually(listed, 60_000, 'the search attribute list');
    for (const key of DELIVERY_SEARCH_ATTRIBUTES) {
      if (existing.includes(`"${key.name}"`)) continue;
      this.o.log(`[cluster] registering search attribute ${key.name} (${cliType(key.type)})`);
      await eventually(() => this.cli(['operator', 'search-attribute', 'create', '--namespace', this.namespace, '--name', key.name, '--type', cliType(key.type)]), 60_000, `search attribute ${key.name}`).catch((err: Error) => {
        if (!/already exists/i.test(err.message)) throw err;
      });
    }
    // The frontend maps a new attribute to its column from its namespace cache, refreshed seconds later: until then a start
    // naming it is refused (`has no mapping defined for search attribute`). A query naming every one passes once they are mapped.
    const query = DELIVERY_SEARCH_ATTRIBUTES.map((key) => `${key.name} IS NULL`).join(' AND ');
    await eventually(() => this.cli(['workflow', 'count', '--namespace', this.namespace, '--query', query]), 60_000, 'the search attributes to be mapped');
  }

  private async startUi(): Promise<Run> {
    if (!this.o.tools.uiServer) throw new Error(`no Temporal Web UI server among the server ${this.o.tools.version} tools`);
    const args = uiServerArgs(this.o.dataDir, { grpcAddress: this.address, port: this.o.ports.ui!, namespace: this.namespace, codecEndpoint: this.o.codecEndpoint });
    const proc = this.spawnLogged('ui', 'ui', this.o.tools.uiServer, args, { PATH: process.env.PATH, HOME: process.env.HOME });
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (proc.child.exitCode !== null || proc.child.signalCode !== null) throw new Error(`the Temporal Web UI server exited while starting:\n${proc.recent.trim()}`);
      if (await accepts(this.o.ports.ui!)) return TemporalCluster.asRun(proc);
      if (Date.now() > deadline) throw new Error(`the Temporal Web UI server did not listen on ${this.uiUrl} within 60 s:\n${proc.recent.trim()}`);
      await sleep(250);
    }
  }

  /** SIGKILLs every process at once (a benchmark's watchdog, on its way out). */
  killAll(): void {
    for (const p of this.processes.values()) p.child.kill('SIGKILL');
    if (this.postgres.pid) process.kill(this.postgres.pid, 'SIGKILL');
  }

  /** Stops every process in STOP_ORDER, PostgreSQL last. */
  async stop(): Promise<void> {
    const rest = [...this.processes.keys()].filter((name) => !STOP_ORDER.flat().includes(name));
    for (const stage of [...STOP_ORDER, rest]) await Promise.all(stage.map((name) => this.processes.get(name)).map((p) => p && stopProcess(p.child, 15_000)));
    await this.postgres.stop();
  }
}

/** Every port a cluster with these ports listens on, with what it is for. */
export function clusterPortList(p: ClusterPorts): { port: number; what: string }[] {
  const list = [
    { port: p.postgres, what: 'PostgreSQL' },
    { port: p.frontend, what: 'Temporal frontend (gRPC)' },
    { port: p.frontendHttp, what: 'Temporal frontend (HTTP)' },
    { port: p.frontendMembership, what: 'Temporal frontend (membership)' },
  ];
  for (const [name, s] of Object.entries(p.services)) list.push({ port: s.grpc, what: `Temporal ${name} (gRPC)` }, { port: s.membership, what: `Temporal ${name} (membership)` });
  if (p.ui) list.push({ port: p.ui, what: 'Temporal Web UI' });
  return list;
}

/** The CLI's --type spelling of a search attribute type (KEYWORD_LIST → KeywordList). */
export function cliType(type: string): string {
  return type
    .toLowerCase()
    .split('_')
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join('');
}

async function eventually<T>(fn: () => Promise<T>, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${(err as Error).message}`, { cause: err });
      await sleep(1_000);
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Refuses to start, naming the port and what it is for, when something already listens there. */
export async function assertPortsFree(ports: { port: number; what: string }[]): Promise<void> {
  const taken: string[] = [];
  for (const { port, what } of ports) {
    const free = await new Promise<boolean>((resolve) => {
      const srv = createServer();
      srv.once('error', () => resolve(false));
      srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
    });
    if (!free) taken.push(`127.0.0.1:${port} (${what})`);
  }
  if (taken.length > 0) {
    throw new Error(`Port${taken.length > 1 ? 's' : ''} already in use: ${taken.join(', ')}. Stop whatever listens there (another \`npm start\` or \`npm run cluster\`?) or choose other ports.`);
  }
}
