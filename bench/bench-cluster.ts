/**
 * The Temporal cluster of `npm run cluster` for a benchmark (`npm run bench -- limits --cluster`,
 * `npm run bench -- latency`): PostgreSQL and the six service processes on free ports, in a
 * temporary data directory that is removed afterwards, with a watchdog like startBenchServer's.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeClusterPorts, TemporalCluster } from '../scripts/cluster/temporal-cluster';
import { ensureServerTools } from '../scripts/cluster/tools';
import { ensureTemporalCli } from '../scripts/temporal-cli';

export interface BenchTemporal {
  address: string;
  namespace: string;
  stop(): Promise<void>;
}

export async function startBenchCluster(progress: (line: string) => void, timeLimitMs: number, killChildren?: () => void): Promise<{ cli: string; server: BenchTemporal; cluster: TemporalCluster; watchdog: NodeJS.Timeout }> {
  const started: { cluster?: TemporalCluster } = {};
  const watchdog = setTimeout(() => {
    progress(`time limit of ${timeLimitMs / 60_000} min reached; killing the benchmark's processes and stopping`);
    killChildren?.();
    started.cluster?.killAll();
    process.exit(1);
  }, timeLimitMs);
  watchdog.unref();
  const cli = await ensureTemporalCli(progress);
  const tools = await ensureServerTools(progress);
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-cluster-'));
  chmodSync(dataDir, 0o755); // PostgreSQL runs as the postgres user when this runs as root
  progress('starting a Temporal cluster on PostgreSQL (frontend, 2 history, 2 matching, worker service)...');
  const cluster = (started.cluster = new TemporalCluster({ tools, cli, dataDir, ports: await freeClusterPorts(false), log: progress }));
  await cluster.start();
  return {
    cli,
    cluster,
    watchdog,
    server: {
      address: cluster.address,
      namespace: cluster.namespace,
      stop: async () => {
        await cluster.stop();
        rmSync(dataDir, { recursive: true, force: true });
      },
    },
  };
}
