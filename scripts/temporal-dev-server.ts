/**
 * The local Temporal dev server: temporal-server (TEMPORAL_SERVER_VERSION, scripts/cluster/tools.ts)
 * as one process running every service, on SQLite (in memory, or a file that keeps data across
 * restarts), bound to 127.0.0.1, with the namespace and the project's search attributes
 * registered, one partition per task queue, fairness, Nexus, and the Web UI server beside it when
 * a UI port is asked for. Used by `npm start`, the `temporal` test project and the benchmarks.
 *
 * Why not `temporal server start-dev`: the Temporal CLI's releases that embed a current server
 * (v1.9.1 names server 1.32.0) cannot be built from the Go module proxy here (their nested module
 * cliext is not served), and the CLI v1.5.1 embeds server 1.29.1. The CLI v1.5.1 stays the
 * command-line client of the tests (`temporal workflow show`, `start`, ...; TEMPORAL_CLI_PATH).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { connectClient } from '../temporal/client-connection';
import { DELIVERY_SEARCH_ATTRIBUTES } from '../contract/search-attributes';
import { ensureNamespace } from './nexus-setup';
import { devServerConfig, uiServerArgs, type DevServerPorts } from './temporal-server-config';
import type { ServerTools } from './cluster/tools';

export interface DevServerOptions {
  /** temporal-server and temporal-ui-server (ensureServerTools, scripts/cluster/tools.ts). */
  tools: Pick<ServerTools, 'server' | 'uiServer'>;
  /** gRPC port; 0 picks a free one. */
  port?: number;
  /** Web UI port; undefined runs headless. */
  uiPort?: number;
  /** The codec endpoint the Web UI decrypts payloads through. */
  codecEndpoint?: string;
  /** Prometheus /metrics on 127.0.0.1:metricsPort; undefined: no metrics. */
  metricsPort?: number;
  /** SQLite file to keep data across restarts; undefined keeps everything in memory. */
  dbFilename?: string;
  namespace?: string;
  /** Dynamic config besides (or replacing) DEV_SERVER_DYNAMIC_CONFIG, key → value. */
  dynamicConfig?: Record<string, unknown>;
  /** Where the server's own output goes; by default it is dropped. */
  output?: NodeJS.WritableStream;
  startTimeoutMs?: number;
}

export interface DevServer {
  address: string;
  namespace: string;
  uiUrl?: string;
  /** As the server reports it (getSystemInfo), e.g. `1.32.1`. */
  serverVersion: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Server settings the project relies on; deploy/temporal-dynamic-config.yaml sets the same for
 * the cluster and docker-compose (test/unit/docker-compose.test.ts keeps them in step):
 * - one partition per task queue, so a queue's server-side rate limit is enforced in one place;
 * - fairness (off by default in server 1.32; without it a fairness key is ignored and dispatch
 *   within one priority is first come, first served), so each courier account's calls get their
 *   turn on the shared queues (contract/priorities.ts, accountPriority). The priority matcher
 *   that food deliveries need (contract/priorities.ts, deliveryPriority) is on by default since 1.30.
 */
export const DEV_SERVER_DYNAMIC_CONFIG: Readonly<Record<string, unknown>> = {
  'matching.numTaskqueueReadPartitions': 1,
  'matching.numTaskqueueWritePartitions': 1,
  'matching.enableFairness': true,
};

/**
 * What the Temporal CLI's dev server sets besides, for a server that one developer or one test
 * run drives hard: search attributes visible as soon as they are created, and the persistence
 * and visibility rates raised to match (the CLI v1.5.1's own defaults).
 */
const DEV_DEFAULTS: Readonly<Record<string, unknown>> = {
  'system.forceSearchAttributesCacheRefreshOnRead': true,
  'frontend.persistenceMaxQPS': 10_000,
  'history.persistenceMaxQPS': 45_000,
  'frontend.namespaceRPS.visibility': 100,
  'history.hostLevelCacheMaxSize': 8096,
};

/** The dev server's dynamic config: the CLI's defaults, the project's settings, then the caller's (a key given again replaces ours). */
export function devServerDynamicConfig(extra: Readonly<Record<string, unknown>> = {}): Record<string, unknown> {
  return { ...DEV_DEFAULTS, ...DEV_SERVER_DYNAMIC_CONFIG, ...extra };
}

/** Whether something accepts connections on 127.0.0.1:port. */
export function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

async function devServerPorts(grpc: number | undefined): Promise<DevServerPorts> {
  const free = () => freePort();
  return {
    frontend: grpc || (await free()),
    frontendHttp: await free(),
    membership: { frontend: await free(), history: await free(), matching: await free(), worker: await free() },
    grpc: { history: await free(), matching: await free(), worker: await free() },
  };
}

export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const namespace = options.namespace ?? 'default';
  const ports = await devServerPorts(options.port);
  const address = `127.0.0.1:${ports.frontend}`;
  // The generated config files; the data lives in dbFilename (or in memory).
  const dir = mkdtempSync(join(tmpdir(), 'temporal-dev-server-'));
  const configFile = join(dir, 'server.yaml');
  const dynamicConfigFile = join(dir, 'dynamic-config.yaml');
  const files = devServerConfig({ ports, dbFilename: options.dbFilename, metricsPort: options.metricsPort, dynamicConfigFile, dynamicConfig: devServerDynamicConfig(options.dynamicConfig) });
  writeFileSync(configFile, files.server);
  writeFileSync(dynamicConfigFile, files.dynamicConfig);

  const children: ChildProcess[] = [];
  const stop = async () => {
    for (const c of [...children].reverse()) await stopProcess(c);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const server = spawnWatched(options.tools.server, ['--config-file', configFile, '--allow-no-auth', 'start'], options.output);
    children.push(server.child);
    const serverVersion = await waitUntil(`temporal-server on ${address}`, server, options.startTimeoutMs ?? 60_000, () => systemVersion(address));
    await registerNamespace(address, namespace);
    let uiUrl: string | undefined;
    if (options.uiPort !== undefined) {
      uiUrl = `http://127.0.0.1:${options.uiPort}`;
      const args = uiServerArgs(dir, { grpcAddress: address, port: options.uiPort, namespace, codecEndpoint: options.codecEndpoint });
      const ui = spawnWatched(options.tools.uiServer, args, options.output);
      children.push(ui.child);
      const uiPort = options.uiPort;
      await waitUntil(`the Temporal Web UI server on ${uiUrl}`, ui, 60_000, async () => ((await accepts(uiPort)) ? true : undefined));
    }
    return { address, namespace, uiUrl, serverVersion, process: server.child, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

interface Watched {
  child: ChildProcess;
  exited(): number | string | undefined;
  recent(): string;
}

function spawnWatched(command: string, args: string[], output: NodeJS.WritableStream | undefined): Watched {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let exited: number | string | undefined;
  let recent = '';
  const keep = (chunk: Buffer) => {
    recent = (recent + chunk.toString()).slice(-4000);
    output?.write(chunk);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  child.on('exit', (code, signal) => (exited = signal ?? code ?? 'unknown'));
  return { child, exited: () => exited, recent: () => recent };
}

/** Polls `ready` until it gives a value; fails with the process's last output if it exits or time runs out. */
async function waitUntil<T>(what: string, p: Watched, timeoutMs: number, ready: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (p.exited() !== undefined) throw new Error(`${what} exited (${p.exited()}) while starting:\n${p.recent()}`);
    const value = await ready();
    if (value !== undefined) return value;
    if (Date.now() > deadline) {
      p.child.kill('SIGKILL');
      throw new Error(`${what} did not answer within ${timeoutMs / 1000} s:\n${p.recent()}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The server's version once its frontend answers and the system namespace is served. */
async function systemVersion(address: string): Promise<string | undefined> {
  let connection: Connection | undefined;
  try {
    connection = await connectClient({ address, connectTimeout: 1_000 });
    await connection.workflowService.describeNamespace({ namespace: 'temporal-system' });
    const info = await connection.workflowService.getSystemInfo({});
    return info.serverVersion ?? 'unknown';
  } catch {
    return undefined;
  } finally {
    await connection?.close().catch(() => undefined);
  }
}

/**
 * The namespace and the project's search attributes (both kept in a database file), then waits
 * until a query naming every attribute is accepted: a start that sets them cannot be refused.
 */
async function registerNamespace(address: string, namespace: string): Promise<void> {
  const connection = await connectClient({ address });
  try {
    await ensureNamespace(connection, namespace);
    const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
    const missing = DELIVERY_SEARCH_ATTRIBUTES.filter((key) => !customAttributes?.[key.name]);
    if (missing.length > 0) {
      const searchAttributes = Object.fromEntries(missing.map((key) => [key.name, indexedValueType(key.type)]));
      await connection.operatorService.addSearchAttributes({ namespace, searchAttributes });
    }
    const query = DELIVERY_SEARCH_ATTRIBUTES.map((key) => `${key.name} IS NULL`).join(' AND ');
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        await connection.workflowService.countWorkflowExecutions({ namespace, query });
        return;
      } catch (err) {
        if (Date.now() > deadline) throw new Error(`the search attributes of namespace ${namespace} were not usable within 30 s: ${(err as Error).message}`, { cause: err });
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  } finally {
    await connection.close();
  }
}

/** The API's IndexedValueType of an SDK search attribute type (KEYWORD → INDEXED_VALUE_TYPE_KEYWORD). */
function indexedValueType(type: string): temporal.api.enums.v1.IndexedValueType {
  const value = temporal.api.enums.v1.IndexedValueType[`INDEXED_VALUE_TYPE_${type}` as keyof typeof temporal.api.enums.v1.IndexedValueType];
  if (value === undefined) throw new Error(`no IndexedValueType for search attribute type ${type}`);
  return value;
}

export function stopProcess(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
