/**
 * The raw-signal baseline of the webhooks benchmark, as a process of its own: a plain script
 * with one Temporal client (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE) sending the same
 * `statusChanged` signals the bridge sends, with `getHandle(id).signal()`, so the benchmark's
 * load generator shares no event loop with it.
 *
 *   TEMPORAL_ADDRESS=127.0.0.1:7233 node --import tsx bench/raw-signals.ts
 *
 * It prints {"ready":true} once connected, then reads one JSON command per line on stdin and
 * answers each with one JSON line on stdout; it exits when stdin ends. Signals are built before
 * the clock starts (as the bridge's webhooks are signed before theirs).
 *
 *   {"op":"throughput","targets":[{"workflowId":"delivery:A","deliveryId":"dlv_1"}],"perTarget":10,"concurrency":32}
 *       → {"count":10,"seconds":0.05,"perSecond":200}
 *   {"op":"open-loop","targets":[...],"count":1000,"perSecond":200}  → {"p50":..,"p99":..,"max":..,"count":1000,"latencies":[..]} (ms)
 *   {"op":"serial","targets":[...],"count":200}                     → the same, one signal at a time
 */
import { createInterface } from 'node:readline';
import { Client, Connection, type ConnectionOptions } from '@temporalio/client';
import { temporalSettingsFromEnv } from '../temporal/connection';
import { statusChangedSignal } from '../contract/delivery-messages';
import { type StatusChange } from '../contract/delivery-types';
import { openLoop, pool, serial, summarize, type Latencies } from './measure';

export interface RawTarget {
  workflowId: string;
  deliveryId: string;
}

export type RawCommand =
  | { op: 'throughput'; targets: RawTarget[]; perTarget: number; concurrency: number }
  | { op: 'open-loop'; targets: RawTarget[]; count: number; perSecond: number }
  | { op: 'serial'; targets: RawTarget[]; count: number };

/** Latencies in ms: the summary, and every sample (so the benchmark can merge segments). */
export type RawLatencies = Latencies & { latencies: number[] };

function withSummary(latencies: number[]): RawLatencies {
  return { ...summarize(latencies), latencies: latencies.map((ms) => Number(ms.toFixed(2))) };
}

async function main(): Promise<void> {
  const temporal = temporalSettingsFromEnv();
  const connection = await Connection.connect(temporal.connectionOptions as ConnectionOptions);
  const client = new Client({ connection, namespace: temporal.namespace });
  let seq = 0;
  /** What the bridge would signal for a `delivery.status_changed` event carrying the status the delivery already has. */
  const signal = (t: RawTarget) => {
    const change: StatusChange = { deliveryId: t.deliveryId, status: 'CREATED', eventId: `evt_raw${process.pid}_${++seq}`, occurredAt: new Date().toISOString(), source: 'webhook' };
    return { workflowId: t.workflowId, change };
  };
  const send = (s: { workflowId: string; change: StatusChange }) => client.workflow.getHandle(s.workflowId).signal(statusChangedSignal, s.change);
  const build = (targets: RawTarget[], count: number) => Array.from({ length: count }, (_, i) => signal(targets[i % targets.length]!));

  async function run(c: RawCommand): Promise<unknown> {
    switch (c.op) {
      case 'throughput': {
        const signals = c.targets.flatMap((t) => Array.from({ length: c.perTarget }, () => signal(t)));
        const started = performance.now();
        const perSecond = await pool(signals, c.concurrency, send);
        return { count: signals.length, seconds: (performance.now() - started) / 1000, perSecond };
      }
      case 'open-loop':
        return withSummary(await openLoop(build(c.targets, c.count), c.perSecond, send));
      case 'serial':
        return withSummary(await serial(build(c.targets, c.count), send));
    }
  }

  process.stdout.write(JSON.stringify({ ready: true }) + '\n');
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) {
    if (!line.trim()) continue;
    try {
      process.stdout.write(JSON.stringify(await run(JSON.parse(line) as RawCommand)) + '\n');
    } catch (err) {
      process.stdout.write(JSON.stringify({ error: (err as Error).message }) + '\n');
    }
  }
  await connection.close();
}

main().catch((err: Error) => {
  console.error(`raw-signals: ${err.stack ?? err.message}`);
  process.exit(1);
});
