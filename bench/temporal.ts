/**
 * The Temporal a benchmark runs on, with a watchdog that ends the run at its time limit
 * (benchmarks stop by themselves and leave no server or other child behind): a dev server of its
 * own on 127.0.0.1 with one partition per task queue, or (`--cluster`) the cluster of
 * `npm run cluster`, PostgreSQL and six service processes on free ports in a temporary directory.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeClusterPorts, TemporalCluster } from '../scripts/cluster/temporal-cluster';
import { ensureServerTools } from '../scripts/cluster/tools';
import { ensureTemporalCli } from '../scripts/temporal-cli';
import { startDevServer, type DevServer } from '../scripts/temporal-dev-server';

export interface BenchTemporal {
  address: string;
  namespace: string;
  stop(): Promise<void>;
}

/** At the time limit: kills what `kill` names and the benchmark's other children, and exits. */
function watchdog(progress: (line: string) => void, timeLimitMs: number, kill: () => void, killChildren?: () => void): NodeJS.Timeout {
  const timer = setTimeout(() => {
    progress(`time limit of ${timeLimitMs / 60_000} min reached; killing the benchmark's processes and stopping`);
    killChildren?.();
    kill();
    process.exit(1);
  }, timeLimitMs);
  timer.unref();
  return timer;
}

export async function startBenchServer(
  progress: (line: string) => void,
  timeLimitMs: number,
  /** Kills the benchmark's other children (workers, ...) when the time limit is reached. */
  killChildren?: () => void,
): Promise<{ cli: string; server: DevServer; watchdog: NodeJS.Timeout }> {
  const started: { server?: DevServer } = {}; // the watchdog may fire before the server is up
  const timer = watchdog(progress, timeLimitMs, () => started.server?.process.kill('SIGKILL'), killChildren);
  const cli = await ensureTemporalCli(progress);
  progress('starting a Temporal dev server (one partition per task queue)...');
  const server = (started.server = await startDevServer({ cli, namespace: 'default' }));
  return { cli, watchdog: timer, server };
}

export async function startBenchCluster(progress: (line: string) => void, timeLimitMs: number, killChildren?: () => void): Promise<{ cli: string; server: BenchTemporal; cluster: TemporalCluster; watchdog: NodeJS.Timeout }> {
  const started: { cluster?: TemporalCluster } = {};
  const timer = watchdog(progress, timeLimitMs, () => started.cluster?.killAll(), killChildren);
  const cli = await ensureTemporalCli(progress);
  const tools = await ensureServerTools(progress);
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-cluster-'));
  chmodSync(dataDir, 0o755); // PostgreSQL runs as the postgres user when this runs as root
  progress('starting a Temporal cluster on PostgreSQL (frontend, 2 history, 2 matching, worker service)...');
  const cluster = (started.cluster = new TemporalCluster({ tools, cli, dataDir, ports: await freeClusterPorts(false), log: progress }));
  await cluster.start();
  const stop = async () => {
    await cluster.stop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  return { cli, cluster, watchdog: timer, server: { address: cluster.address, namespace: cluster.namespace, stop } };
}
