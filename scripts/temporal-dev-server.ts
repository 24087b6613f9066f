/**
 * Starts `temporal server start-dev` bound to 127.0.0.1 with the project's search attributes
 * registered and one partition per task queue, so a task queue's rate limit is enforced in one
 * place instead of being split across partitions. Used by `npm start` and by the test suite.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { connect, createServer } from 'node:net';
import { Connection } from '@temporalio/client';
import { connectClient } from '../temporal/client-connection';
import { DELIVERY_SEARCH_ATTRIBUTES } from '../contract/search-attributes';

export interface DevServerOptions {
  cli: string;
  /** gRPC port; 0 picks a free one. */
  port?: number;
  /** Web UI port; undefined runs headless. */
  uiPort?: number;
  /** SQLite file to keep data across restarts; undefined keeps everything in memory. */
  dbFilename?: string;
  namespace?: string;
  /** Where the server's own output goes; by default it is dropped. */
  output?: NodeJS.WritableStream;
  extraArgs?: string[];
  startTimeoutMs?: number;
}

export interface DevServer {
  address: string;
  namespace: string;
  uiUrl?: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Server settings the project relies on; deploy/temporal-dynamic-config.yaml sets the same for
 * docker-compose (test/unit/docker-compose.test.ts keeps them in step):
 * - one partition per task queue, so a queue's server-side rate limit is enforced in one place;
 * - the priority matcher, so food deliveries' tasks go first when a queue backs up
 *   (contract/priorities.ts, deliveryPriority);
 * - fairness (server 1.29 has it behind this setting; without it a fairness key is ignored and
 *   dispatch within one priority is first come, first served), so each courier account's calls
 *   get their turn on the shared queues (contract/priorities.ts, accountPriority).
 */
export const DEV_SERVER_DYNAMIC_CONFIG = ['matching.numTaskqueueReadPartitions=1', 'matching.numTaskqueueWritePartitions=1', 'matching.useNewMatcher=true', 'matching.enableFairness=true'] as const;

/** The flags that make the dev server match what the project needs. */
export function devServerArgs(o: { port: number; uiPort?: number; dbFilename?: string; namespace: string; extraArgs?: string[] }): string[] {
  const extra = o.extraArgs ?? [];
  // A dynamic config key given again in extraArgs replaces ours (e.g. a benchmark with fairness off).
  const replaced = new Set(extra.filter((_, i) => extra[i - 1] === '--dynamic-config-value').map((v) => v.split('=')[0]!));
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(o.port), '--namespace', o.namespace, '--log-level', 'warn'];
  if (o.uiPort !== undefined) args.push('--ui-ip', '127.0.0.1', '--ui-port', String(o.uiPort));
  else args.push('--headless');
  if (o.dbFilename) args.push('--db-filename', o.dbFilename);
  for (const key of DELIVERY_SEARCH_ATTRIBUTES) args.push('--search-attribute', `${key.name}=${searchAttributeFlagType(key.type)}`);
  for (const v of DEV_SERVER_DYNAMIC_CONFIG) if (!replaced.has(v.split('=')[0]!)) args.push('--dynamic-config-value', v);
  return [...args, ...extra];
}

function searchAttributeFlagType(type: string): string {
  const names: Record<string, string> = { KEYWORD: 'Keyword', TEXT: 'Text', INT: 'Int', DOUBLE: 'Double', BOOL: 'Bool', DATETIME: 'Datetime', KEYWORD_LIST: 'KeywordList' };
  const name = names[type];
  if (!name) throw new Error(`no dev-server flag type for search attribute type ${type}`);
  return name;
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

export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const namespace = options.namespace ?? 'default';
  const port = options.port || (await freePort());
  const args = devServerArgs({ port, uiPort: options.uiPort, dbFilename: options.dbFilename, namespace, extraArgs: options.extraArgs });
  const child = spawn(options.cli, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let exited: number | null | undefined;
  let recent = '';
  const keep = (chunk: Buffer) => {
    recent = (recent + chunk.toString()).slice(-4000);
    options.output?.write(chunk);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  child.on('exit', (code) => (exited = code));

  const address = `127.0.0.1:${port}`;
  const deadline = Date.now() + (options.startTimeoutMs ?? 60_000);
  for (;;) {
    if (exited !== undefined) throw new Error(`temporal server start-dev exited with code ${exited}:\n${recent}`);
    if (await isServing(address, namespace)) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`temporal server start-dev did not answer on ${address} in time:\n${recent}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }

  return {
    address,
    namespace,
    uiUrl: options.uiPort !== undefined ? `http://127.0.0.1:${options.uiPort}` : undefined,
    process: child,
    stop: () => stopProcess(child),
  };
}

/** Ready means the namespace answers, not just that the port is open. */
async function isServing(address: string, namespace: string): Promise<boolean> {
  let connection: Connection | undefined;
  try {
    connection = await connectClient({ address, connectTimeout: 1_000 });
    await connection.workflowService.describeNamespace({ namespace });
    return true;
  } catch {
    return false;
  } finally {
    await connection?.close().catch(() => undefined);
  }
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
