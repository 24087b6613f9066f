/** The webhooks benchmark's raw-signal baseline, a process of its own (no event loop shared with the load generator); JSON lines in and out. */
import { createInterface } from 'node:readline';
import { Client, type ConnectionOptions } from '@temporalio/client';
import { connectClient } from '../temporal/client-connection';
import { statusChangedSignal } from '../contract/delivery-messages';
import type { StatusChange } from '../contract/delivery-types';
import type { ProcessGroup } from '../scripts/processes';
import { temporalSettingsFromEnv } from '../temporal/connection';
import { openLoop, pool, serial } from './measure';

export type RawTarget = { workflowId: string; deliveryId: string };

/** One signal per target, in the targets' order, through the loop the bridge's webhooks go through. */
export type RawCommand = { targets: RawTarget[] } & ({ op: 'throughput'; concurrency: number } | { op: 'open-loop'; perSecond: number } | { op: 'serial' });

/** Starts this file as a process of its own; run() answers signals per second (throughput) or each signal's latency in ms. */
export async function startRawSignals(group: ProcessGroup, env: NodeJS.ProcessEnv) {
  const service = await group.start({ name: 'raw-signals', entry: 'bench/raw-signals.ts', ready: /^raw-signals: connected/m, env, isolated: true, interactive: true });
  const answers = createInterface({ input: service.child.stdout! })[Symbol.asyncIterator]();
  /** A command that gets no answer within 5 minutes (a stuck child; a throughput round of the default counts takes seconds) ends the benchmark instead of holding it. */
  const run = async <T extends number | number[]>(command: RawCommand, timeoutMs = 5 * 60_000): Promise<T> => {
    service.child.stdin!.write(JSON.stringify(command) + '\n');
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`raw-signals gave no answer to ${command.op} within ${timeoutMs / 1000} s:\n${service.output().slice(-3000)}`)), timeoutMs);
    });
    try {
      const answer = await Promise.race([answers.next(), late]);
      if (answer.done) throw new Error(`raw-signals exited:\n${service.output().slice(-3000)}`);
      return JSON.parse(answer.value as string) as T;
    } finally {
      clearTimeout(timer);
    }
  };
  return { service, run };
}

async function main(): Promise<void> {
  const temporal = temporalSettingsFromEnv();
  const connection = await connectClient(temporal.connectionOptions as ConnectionOptions);
  const client = new Client({ connection, namespace: temporal.namespace });
  let seq = 0;
  // What the bridge signals for a `delivery.status_changed` event carrying the status the delivery already has.
  const signal = (t: RawTarget) => ({ workflowId: t.workflowId, change: { deliveryId: t.deliveryId, status: 'CREATED', eventId: `evt_raw${++seq}`, occurredAt: new Date().toISOString(), source: 'webhook' } satisfies StatusChange });
  const send = async (s: ReturnType<typeof signal>) => client.workflow.getHandle(s.workflowId).signal(statusChangedSignal, s.change);
  console.error('raw-signals: connected');
  for await (const line of createInterface({ input: process.stdin })) {
    const c = JSON.parse(line) as RawCommand;
    // Built before the clock starts, as the bridge's webhooks are signed before theirs.
    const signals = c.targets.map(signal);
    const answer = c.op === 'throughput' ? await pool(signals, c.concurrency, send) : c.op === 'open-loop' ? await openLoop(signals, c.perSecond, send) : await serial(signals, send);
    process.stdout.write(JSON.stringify(answer) + '\n');
  }
  await connection.close();
}

if (require.main === module) {
  main().catch((err: Error) => {
    console.error(`raw-signals: ${err.stack ?? err.message}`);
    process.exit(1);
  });
}
