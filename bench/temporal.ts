/**
 * The Temporal a benchmark runs on, with a watchdog that kills it and ends the run at the time
 * limit: a dev server of its own on 127.0.0.1 with one partition per task queue, or (`--cluster`)
 * the cluster of `npm run cluster`, PostgreSQL and six service processes on free ports.
 */
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeClusterPorts, TemporalCluster } from '../scripts/cluster/temporal-cluster';
import { ensureServerTools } from '../scripts/cluster/tools';
import { ensureTemporalCli } from '../scripts/temporal-cli';
import { startDevServer, type DevServer } from '../scripts/temporal-dev-server';

/** Every process this one started, and theirs (from /proc): a benchmark leaves none behind. */
function descendants(): number[] {
  const parents = new Map<number, number>();
  for (const name of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parents.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  const found = [process.pid];
  for (let i = 0; i < found.length; i++) for (const [pid, ppid] of parents) if (ppid === found[i]) found.push(pid);
  return found.slice(1);
}

/** At the time limit: kills every process this one started (the server too, up or not yet), and exits. */
function watchdog(progress: (line: string) => void, timeLimitMs: number): NodeJS.Timeout {
  const timer = setTimeout(() => {
    progress(`time limit of ${timeLimitMs / 60_000} min reached; killing the benchmark's processes and stopping`);
    // All found before any is killed: a killed parent's children would move to init and out of sight.
    for (const pid of descendants()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    process.exit(1);
  }, timeLimitMs);
  return timer.unref();
}

/** `extraArgs` go to `temporal server start-dev` as they are, e.g. `--metrics-port 9090` (bench/notify.ts reads its request counters). */
export async function startBenchServer(progress: (line: string) => void, timeLimitMs: number, extraArgs: string[] = []): Promise<{ cli: string; server: DevServer; watchdog: NodeJS.Timeout }> {
  const timer = watchdog(progress, timeLimitMs);
  const cli = await ensureTemporalCli(progress);
  progress('starting a Temporal dev server (one partition per task queue)...');
  const server = await startDevServer({ cli, namespace: 'default', extraArgs });
  return { cli, watchdog: timer, server };
}

export async function startBenchCluster(progress: (line: string) => void, timeLimitMs: number): Promise<{ cli: string; server: { address: string; namespace: string; stop(): Promise<void> }; watchdog: NodeJS.Timeout }> {
  const timer = watchdog(progress, timeLimitMs);
  const cli = await ensureTemporalCli(progress);
  const tools = await ensureServerTools(progress);
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-cluster-'));
  chmodSync(dataDir, 0o755); // PostgreSQL runs as the postgres user when this runs as root
  progress('starting a Temporal cluster on PostgreSQL (frontend, 2 history, 2 matching, worker service)...');
  const cluster = new TemporalCluster({ tools, cli, dataDir, ports: await freeClusterPorts(false), log: progress });
  await cluster.start();
  const stop = () => cluster.stop().then(() => rmSync(dataDir, { recursive: true, force: true }));
  return { cli, watchdog: timer, server: { address: cluster.address, namespace: cluster.namespace, stop } };
}

/** Requests the dev server's frontend has answered so far, by operation, from its Prometheus endpoint (`--metrics-port`). */
export async function frontendRequests(metricsUrl: URL): Promise<Record<string, number>> {
  const text = await (await fetch(metricsUrl)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^service_requests\{([^}]*)\} (\S+)$/gm)) {
    const op = /operation="(\w+)"/.exec(m[1]!)?.[1];
    if (op && m[1]!.includes('service_name="frontend"')) out[op] = (out[op] ?? 0) + Number(m[2]);
  }
  return out;
}
