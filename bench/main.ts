// bench/: the benchmarks (npm run bench), their shared measuring helpers and charts.
/** `npm run bench -- <name> [--cluster]`: one benchmark, bounded in count and time; its results: docs/benchmarks.md. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { accountsBenchmark } from './accounts';
import { costBenchmark } from './cost';
import { fleetBenchmark } from './fleet';
import { latencyBenchmark } from './latency';
import { limitsBenchmark } from './limits';
import { notifyBenchmark } from './notify';
import { refusalsBenchmark } from './refusals';
import { scaleBenchmark } from './scale';
import { simulatorBenchmark } from './simulator';
import { startChecksBenchmark } from './start-checks';
import { webhooksBenchmark } from './webhooks';
import type { BenchmarkOutput } from './measure';

const BENCHMARKS: Record<string, { describe: string; run: () => Promise<BenchmarkOutput> }> = {
  accounts: { describe: 'many courier accounts on one set of workers: 100 at once (a 300-order backlog beside 99 small ones, one key revoked), then 10,000 registered and idle (starts its own Temporal dev server)', run: accountsBenchmark },
  cost: { describe: 'what a delivery costs: billable actions by type (delivery, gate share, notifications), history events, worker CPU per delivery, bridge CPU per webhook, for 3, 1 and 30 stops (starts its own Temporal dev server)', run: costBenchmark },
  fleet: { describe: "the fleet view's visibility queries: per poll and per status per 30 s with 3,000 open deliveries, and how many polls each status's oldest takes to be known (starts its own Temporal dev server)", run: fleetBenchmark },
  simulator: { describe: 'throughput of the provider simulator (so other benchmarks know it is not their bottleneck)', run: simulatorBenchmark },
  limits: { describe: 'dispatch at the provider limits: pacing gate vs task-queue limit vs a naive client, and a backlog with poison orders (starts its own Temporal dev server)', run: limitsBenchmark },
  latency: { describe: 'end-to-end delivery latency (create → CREATED seen by status), p50/p99, on the dev server and on the Temporal cluster of `npm run cluster`, in one run', run: latencyBenchmark },
  notify: { describe: 'notifications: open deliveries told (signal, HTTP) beside followed by watch while nothing changes; webhook → order system latency; receiver down, then back, with and without a worker SIGKILL (starts its own Temporal dev server)', run: notifyBenchmark },
  refusals: { describe: 'webhook bridge: time to the 401 of a bad signature to a served account (one and two secrets) against a webhook to an account it does not serve; no server', run: refusalsBenchmark },
  scale: { describe: 'many open deliveries (10,000 × 5 destinations) followed by one worker process: start rate, status latency, worker memory by cache size (starts its own Temporal dev server)', run: scaleBenchmark },
  'start-checks': { describe: "the delivery workflow's start check: in the worker's thread (as it runs) against the same schemas evaluated in each workflow's sandbox; no server", run: startChecksBenchmark },
  webhooks: { describe: 'webhook bridge: throughput against raw signals, acknowledgement and propagation latency (starts its own Temporal dev server)', run: webhooksBenchmark },
};

const charted = (o: BenchmarkOutput): o is Extract<BenchmarkOutput, { charts: unknown }> => typeof o.charts === 'object';

async function main(): Promise<void> {
  const name = process.argv[2];
  const onCluster = process.argv.slice(3).includes('--cluster');
  if (onCluster) process.env.BENCH_TEMPORAL = 'cluster'; // read by the benchmarks that run on either
  if (!name || !BENCHMARKS[name]) {
    console.error('usage: npm run bench -- <name> [--cluster]\n' + Object.entries(BENCHMARKS).map(([n, b]) => `  ${n}: ${b.describe}`).join('\n'));
    process.exit(2);
  }
  const output = await BENCHMARKS[name]!.run();
  const { figures, charts } = charted(output) ? output : { figures: output, charts: {} };
  // The command, with the benchmark's own settings from the environment, repeats the run as it was.
  const settings = Object.entries(process.env).flatMap(([k, v]) => (/^[A-Z]+_BENCH_/.test(k) ? [`${k}=${v}`] : []));
  const command = [...settings, `npm run bench -- ${name}${onCluster ? ' --cluster' : ''}`].join(' ');
  // A partial run (e.g. one phase of a benchmark) can keep its figures apart: BENCH_RESULTS_NAME=limits-window.
  const base = process.env.BENCH_RESULTS_NAME ?? (onCluster ? `${name}-cluster` : name);
  const dir = join(__dirname, 'results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${base}.json`), JSON.stringify({ name, command, machine: { cpus: cpus().length, node: process.version }, figures, finishedAt: new Date().toISOString() }, null, 2) + '\n');
  console.table(figures);
  for (const [chart, svg] of Object.entries(charts)) writeFileSync(join(dir, `${base}-${chart}.svg`), svg);
  console.log(`written to bench/results/${base}.json${Object.keys(charts).map((chart) => `, ${base}-${chart}.svg`).join('')}`);
  // Bounded and done: leave even if a library still holds a handle open.
  process.exit(0);
}

main().catch((err: Error) => {
  // A Temporal ServiceError says what the server answered only in its cause.
  for (let e: unknown = err; e instanceof Error; e = e.cause) console.error(e === err ? (err.stack ?? err.message) : `caused by: ${e.message}`);
  process.exit(1);
});
