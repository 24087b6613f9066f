/**
 * The start every Temporal benchmark shares: a watchdog that ends the run at its time limit
 * (benchmarks stop by themselves), the Temporal CLI (built if missing), and a dev server of the
 * benchmark's own on 127.0.0.1 with one partition per task queue.
 */
import { ensureTemporalCli } from '../scripts/temporal-cli';
import { startDevServer, type DevServer } from '../scripts/temporal-dev-server';

export async function startBenchServer(progress: (line: string) => void, timeLimitMs: number): Promise<{ cli: string; server: DevServer; watchdog: NodeJS.Timeout }> {
  const watchdog = setTimeout(() => {
    progress(`time limit of ${timeLimitMs / 60_000} min reached; stopping`);
    process.exit(1);
  }, timeLimitMs);
  watchdog.unref();
  const cli = await ensureTemporalCli(progress);
  progress('starting a Temporal dev server (one partition per task queue)...');
  return { cli, watchdog, server: await startDevServer({ cli, namespace: 'default' }) };
}
