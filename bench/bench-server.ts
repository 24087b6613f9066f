/**
 * The start every Temporal benchmark shares: a watchdog that ends the run at its time limit
 * (benchmarks stop by themselves, and leave no dev server or other child behind), the Temporal
 * CLI (built if missing), and a dev server of the benchmark's own on 127.0.0.1 with one partition
 * per task queue.
 */
import { ensureTemporalCli } from '../scripts/temporal-cli';
import { startDevServer, type DevServer } from '../scripts/temporal-dev-server';

export async function startBenchServer(
  progress: (line: string) => void,
  timeLimitMs: number,
  /** Kills the benchmark's other children (workers, ...) when the time limit is reached. */
  killChildren?: () => void,
): Promise<{ cli: string; server: DevServer; watchdog: NodeJS.Timeout }> {
  const started: { server?: DevServer } = {}; // the watchdog may fire before the server is up
  const watchdog = setTimeout(() => {
    progress(`time limit of ${timeLimitMs / 60_000} min reached; killing the benchmark's processes and stopping`);
    killChildren?.();
    started.server?.process.kill('SIGKILL');
    process.exit(1);
  }, timeLimitMs);
  watchdog.unref();
  const cli = await ensureTemporalCli(progress);
  progress('starting a Temporal dev server (one partition per task queue)...');
  const server = (started.server = await startDevServer({ cli, namespace: 'default' }));
  return { cli, watchdog, server };
}
