/**
 * `npm run bench -- <name>`: runs one benchmark, prints its figures and writes them to
 * bench/results/<name>.json. Every benchmark is bounded in count and time and stops by itself.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { latencyBenchmark } from './latency';
import { limitsBenchmark } from './limits';
import { scaleBenchmark } from './scale';
import { simulatorBenchmark } from './simulator';
import { startChecksBenchmark } from './start-checks';
import { webhooksBenchmark } from './webhooks';
import type { BenchmarkOutput } from './measure';

export interface BenchmarkResult {
  name: string;
  /** How the figures were produced, so a reader can reproduce them. */
  command: string;
  machine: { cpus: number; node: string };
  figures: Record<string, number | string>;
  finishedAt: string;
}


const BENCHMARKS: Record<string, { describe: string; run: () => Promise<BenchmarkOutput> }> = {
  simulator: { describe: 'throughput of the provider simulator (so other benchmarks know it is not their bottleneck)', run: simulatorBenchmark },
  limits: { describe: 'dispatch at the provider limits: pacing gate vs task-queue limit vs a naive client, and a backlog with poison orders (starts its own Temporal dev server)', run: limitsBenchmark },
  latency: { describe: 'end-to-end delivery latency (create → CREATED seen by status), p50/p99, on the dev server and on the Temporal cluster of `npm run cluster`, in one run', run: latencyBenchmark },
  scale: { describe: 'many open deliveries (10,000 × 5 destinations) followed by one worker process: start rate, status latency, worker memory by cache size (starts its own Temporal dev server)', run: scaleBenchmark },
  'start-checks': { describe: "the delivery workflow's start check: in the worker's thread (as it runs) against the same schemas evaluated in each workflow's sandbox; no server", run: startChecksBenchmark },
  webhooks: { describe: 'webhook bridge: throughput against raw signals, acknowledgement and propagation latency (starts its own Temporal dev server)', run: webhooksBenchmark },
};

function isCharted(o: BenchmarkOutput): o is { figures: Record<string, number | string>; charts: Record<string, string> } {
  return typeof o.figures === 'object' && typeof o.charts === 'object';
}

async function main(): Promise<void> {
  const name = process.argv[2];
  // `npm run bench -- limits --cluster`: Temporal as the cluster of `npm run cluster` (bench/temporal.ts).
  const onCluster = process.argv.slice(3).includes('--cluster');
  if (onCluster) process.env.BENCH_TEMPORAL = 'cluster';
  if (!name || !BENCHMARKS[name]) {
    console.error('usage: npm run bench -- <name>\n' + Object.entries(BENCHMARKS).map(([n, b]) => `  ${n}: ${b.describe}`).join('\n'));
    process.exit(2);
  }
  const output = await BENCHMARKS[name]!.run();
  const { figures, charts } = isCharted(output) ? output : { figures: output, charts: {} };
  const os = await import('node:os');
  const result: BenchmarkResult = {
    name,
    // With the benchmark's own settings from the environment, so the run can be repeated as it was.
    command: [
      ...Object.entries(process.env)
        .filter(([k]) => /^[A-Z]+_BENCH_/.test(k))
        .map(([k, v]) => `${k}=${v}`),
      `npm run bench -- ${name}${onCluster ? ' --cluster' : ''}`,
    ].join(' '),
    machine: { cpus: os.cpus().length, node: process.version },
    figures,
    finishedAt: new Date().toISOString(),
  };
  const dir = join(__dirname, 'results');
  mkdirSync(dir, { recursive: true });
  // A partial run (e.g. one phase of a benchmark) can keep its figures apart: BENCH_RESULTS_NAME=limits-window.
  const file = `${process.env.BENCH_RESULTS_NAME ?? (onCluster ? `${name}-cluster` : name)}.json`;
  writeFileSync(join(dir, file), JSON.stringify(result, null, 2) + '\n');
  console.table(figures);
  console.log(`written to bench/results/${file}`);
  for (const [chart, svg] of Object.entries(charts)) {
    const chartFile = file.replace(/\.json$/, `-${chart}.svg`);
    writeFileSync(join(dir, chartFile), svg);
    console.log(`written to bench/results/${chartFile}`);
  }
  // Bounded and done: leave even if a library still holds a handle open.
  process.exit(0);
}

main().catch((err: Error) => {
  console.error(err.stack ?? err.message);
  process.exit(1);
});
