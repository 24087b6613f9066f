/**
 * Surviving failures, with every part a real process started as an operator starts it: the
 * provider simulator (moving deliveries along on its own and sending signed webhooks), the
 * webhook bridge and the worker, on a Temporal dev server. 200 deliveries are in flight while
 *
 *  1. the worker is killed with SIGKILL again and again, and started again each time;
 *  2. the Temporal dev server stops and starts again on the same SQLite file;
 *  3. the bridge restarts (killed once, stopped once) while webhooks arrive.
 *
 * Each time, every workflow must end in the simulator's true final state, and the simulator must
 * hold exactly one delivery per reference: no duplicate, none without a workflow. In 3, no
 * webhook may be lost: the attempts that failed during the restarts were retried until they got
 * through.
 */
import { Client, Connection } from '@temporalio/client';
import { connectClient } from '../../temporal/client-connection';
import { temporal } from '@temporalio/proto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeliveryClient } from '../../client/delivery-client';
import type { DeliveryRecord } from '../../provider/schemas';
import { startDevServer, type DevServer } from '../../scripts/temporal-dev-server';
import { ensureServerTools } from '../../scripts/cluster/tools';
import type { WebhookAttempt, WebhookDispatch } from '../../simulator/webhooks';
import type { DeliveryOrder, DeliveryResult } from '../../contract/delivery-types';
import { deliveryWorkflowId } from '../../contract/workflow-ids';
import { deliveryRequest } from '../fixtures/orders';
import { removeWorkflowBundleFile } from '../../scripts/processes';
import { DeliveryProcesses, type SimDelivery } from '../helpers/processes';
import { testServerAddress } from '../helpers/temporal';

const DELIVERIES = 200;
/**
 * The worker: the simulator's limits are raised far above the load, and the worker is told so.
 * Provider calls are paced by Temporal's task-queue rate limit (PROVIDER_PACING=task-queue):
 * the default pacing gate makes every quote and creation call itself, which makes 200
 * creations take 40-55 s on a 2-core machine instead of ~15 s and would put each scenario at
 * two minutes or more. gate-survival.test.ts kills workers under the gate.
 */
const WORKER_ENV = { PROVIDER_RATE_LIMITS: 'creations=100000/1s,quotes=100000/1s,other=100000/1s', PROVIDER_PACING: 'task-queue' };

/**
 * Simulator settings: provider time runs `timeScale` times faster, so webhook retries come after
 * 5 s / timeScale, then 30 s / timeScale, ...; each delivery takes one lifecycle step every
 * `stepMs` real milliseconds (4 steps with one destination, 5 with two), or none with 0 (then the
 * test is the courier).
 */
function simulatorEnv(o: { timeScale: number; stepMs: number }): NodeJS.ProcessEnv {
  return {
    SIMULATOR_TIME_SCALE: String(o.timeScale),
    SIMULATOR_AUTO_ADVANCE_MS: String(o.stepMs * o.timeScale),
    SIMULATOR_RATE_LIMIT_CREATIONS: '1000000',
    SIMULATOR_RATE_LIMIT_QUOTES: '1000000',
    SIMULATOR_RATE_LIMIT_OTHER: '1000000',
    // A webhook attempt that hangs (the bridge waiting for an absent Temporal) fails after this.
    SIMULATOR_WEBHOOK_TIMEOUT_MS: '5000',
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** The processes' last words for a failure message, without the bridge's line per webhook drowning the rest. */
function lastOutput(s: Scenario): string {
  const running = `worker ${s.procs.worker?.running ? 'running' : 'not running'}, bridge ${s.procs.bridge?.running ? 'running' : 'not running'}`;
  const notes = [...s.marks, ...s.diagnostics.map((d) => d())].join('\n  ');
  return `--- so far:\n  ${notes}\n--- ${running}; last output of the processes ---\n${s.procs.group.tail(5_000, (l) => !l.includes('"msg":"webhook"'))}\n${s.procs.group.tail(1_500)}`;
}

/** Runs `fn` over `items`, `width` at a time. */
async function pool<T>(items: readonly T[], width: number, fn: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i]!, i);
      }
    }),
  );
}

/** Half the orders have one destination, half two; half are food. */
function order(i: number): DeliveryOrder {
  const { reference_number: _r, ...o } = deliveryRequest({ is_food: i % 2 === 0 }, 1 + (i % 2));
  return o;
}

/** One scenario's processes, its own Temporal client, and its deliveries. */
interface Scenario {
  procs: DeliveryProcesses;
  connection: Connection;
  client: Client;
  deliveries: DeliveryClient;
  references: string[];
  started: number;
  /** Milestones, for the summary each test prints: `12.3 s all created`. */
  marks: string[];
  mark(what: string): void;
  /** More to say in a failure message. */
  diagnostics: (() => string)[];
}

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch((e: unknown) => console.warn(`cleanup: ${String(e)}`));
});
afterAll(() => removeWorkflowBundleFile());

async function startScenario(name: string, o: { temporalAddress: string; timeScale: number; stepMs: number }): Promise<Scenario> {
  const { namespace } = testServerAddress();
  const procs = await DeliveryProcesses.start({
    temporalAddress: o.temporalAddress,
    namespace,
    prefix: name,
    simulatorEnv: simulatorEnv(o),
    workerEnv: WORKER_ENV,
  });
  cleanups.push(() => procs.stop());
  const connection = await connectClient({ address: o.temporalAddress });
  cleanups.push(() => connection.close());
  const client = new Client({ connection, namespace, dataConverter: procs.dataConverter() });
  const deliveries = new DeliveryClient({ temporal: client, taskQueue: procs.taskQueue, followUp: { endGraceMs: 0 } });
  const run = Date.now().toString(36).toUpperCase();
  const references = Array.from({ length: DELIVERIES }, (_, i) => `${name.toUpperCase()}-${run}-${String(i).padStart(3, '0')}`);
  const started = Date.now();
  const marks: string[] = [];
  const mark = (what: string) => marks.push(`${seconds(Date.now() - started)} ${what}`);
  return { procs, connection, client, deliveries, references, started, marks, mark, diagnostics: [] };
}

async function startDeliveries(s: Scenario): Promise<void> {
  await pool(s.references, 20, async (reference, i) => {
    const started = await s.deliveries.startDelivery(order(i), { reference });
    if (started.alreadyStarted) throw new Error(`${reference} was started before`);
  });
  s.mark(`${DELIVERIES} workflows started`);
}

/** Polls until `done` says yes, then marks the milestone; on time-out, says what was awaited. */
async function waitFor(s: Scenario, what: string, done: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${seconds(timeoutMs)} waiting for ${what}\n${lastOutput(s)}`);
    await sleep(250);
  }
  s.mark(what);
}

/**
 * Plays the courier when the simulator does not advance on its own: every `intervalMs`, each
 * delivery that has not ended takes its next step on the happy path (and the simulator sends
 * its webhooks), until stop().
 */
function startCourier(s: Scenario, intervalMs: number): { stop(): Promise<void> } {
  let running = true;
  const stats = { rounds: 0, steps: 0, errors: 0, lastError: '', lastRoundAt: 0 };
  s.diagnostics.push(() => `courier: ${stats.rounds} rounds (last ${seconds(Date.now() - stats.lastRoundAt)} ago), ${stats.steps} steps, ${stats.errors} errors ${stats.lastError}`);
  const loop = (async () => {
    while (running) {
      const all = await s.procs.sim.deliveries().catch((e: Error) => {
        stats.errors++;
        stats.lastError = e.message;
        return [];
      });
      const open = all.filter(({ delivery }) => !['DELIVERED', 'CANCELED'].includes(delivery.status));
      await pool(open, 20, async ({ delivery }) => {
        await s.procs.sim.advance(delivery.id).then(
          () => stats.steps++,
          (e: Error) => {
            stats.errors++; // a 409 when it ended meanwhile
            stats.lastError = e.message;
          },
        );
      });
      stats.rounds++;
      stats.lastRoundAt = Date.now();
      await sleep(intervalMs);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
    },
  };
}

const deliveryQuery = (s: Scenario, extra: string) => `WorkflowType = 'delivery' AND TaskQueue = '${s.procs.taskQueue}' AND ${extra}`;

/** Counts this scenario's delivery workflows in a state; undefined while Temporal does not answer. */
async function countDeliveries(s: Scenario, extra: string): Promise<number | undefined> {
  try {
    return (await s.client.workflow.count(deliveryQuery(s, extra))).count;
  } catch {
    return undefined;
  }
}

/**
 * Waits until every delivery workflow has closed. Gives up when nothing has moved for `stallMs`
 * (no workflow closed, no delivery created or changed at the simulator), or after `timeoutMs` in
 * all; the error then names the deliveries still running, with what the workflow and the
 * simulator each say about them. A slow machine only makes it wait longer.
 */
async function waitForAllToEnd(s: Scenario, o: { stallMs: number; timeoutMs: number }): Promise<void> {
  const deadline = Date.now() + o.timeoutMs;
  let progress = '';
  let movedAt = Date.now();
  let why: string;
  for (;;) {
    const running = await countDeliveries(s, `ExecutionStatus = 'Running'`);
    const closed = await countDeliveries(s, `ExecutionStatus != 'Running'`);
    if (running === 0 && closed === DELIVERIES) {
      s.mark(`all ${DELIVERIES} workflows closed`);
      return;
    }
    const sim = await s.procs.sim.deliveries().catch(() => []);
    const now = `${running}/${closed}/${sim.map(({ delivery: d }) => d.updated_at + d.status).join()}`;
    if (now !== progress) [progress, movedAt] = [now, Date.now()];
    if (Date.now() - movedAt > o.stallMs) {
      why = `nothing moved for ${seconds(o.stallMs)}`;
      break;
    }
    if (Date.now() > deadline) {
      why = `not over after ${seconds(o.timeoutMs)}`;
      break;
    }
    await sleep(1_000);
  }
  const open: string[] = [];
  for await (const wf of s.client.workflow.list({ query: deliveryQuery(s, `ExecutionStatus = 'Running'`) })) open.push(wf.workflowId.replace(/^delivery:/, ''));
  const states = await Promise.all(
    open.slice(0, 30).map(async (reference) => {
      const handle = s.client.workflow.getHandle(deliveryWorkflowId(reference));
      const [state, description] = await Promise.all([s.deliveries.getStatus(reference).catch((e: Error) => e), handle.describe().catch(() => undefined)]);
      const activities = (description?.raw.pendingActivities ?? []).map(
        (a) => `${a.activityType?.name} ${temporal.api.enums.v1.PendingActivityState[a.state ?? 0]} attempt ${a.attempt}${a.lastFailure?.message ? ` (${a.lastFailure.message})` : ''}`,
      );
      return { reference, state, activities };
    }),
  );
  const truth = byReference(await s.procs.sim.deliveries()); // after the workflows: it may only be ahead of them
  const details = states.map(({ reference, state, activities }) => {
    const ours = state instanceof Error ? `query failed (${state.message})` : `${state.phase}, ${describeState(state)}`;
    const theirs = truth.get(reference)?.map(describeRecord).join(' + ') ?? 'no delivery';
    return `${reference}: workflow ${ours}${activities.length ? `, pending ${activities.join(', ')}` : ''}; simulator ${theirs}`;
  });
  throw new Error(
    `${open.length} of ${DELIVERIES} deliveries still running (${why}):\n  ${details.join('\n  ')}\n${lastOutput(s)}`,
  );
}

function byReference(sim: SimDelivery[]): Map<string, DeliveryRecord[]> {
  const map = new Map<string, DeliveryRecord[]>();
  for (const { delivery } of sim) {
    const key = delivery.reference_number ?? '(none)';
    map.set(key, [...(map.get(key) ?? []), delivery]);
  }
  return map;
}

function describeStatuses(id: string | undefined, status: string | undefined, destinations: { id: string; status: string }[]): string {
  const dests = [...destinations].sort((a, b) => a.id.localeCompare(b.id)).map((d) => `${d.id} ${d.status}`);
  return `${id ?? '(no delivery id)'} ${status ?? '(no status)'} [${dests.join(', ')}]`;
}
const describeState = (r: Pick<DeliveryResult, 'deliveryId' | 'status' | 'destinations'>) => describeStatuses(r.deliveryId, r.status, r.destinations);
const describeRecord = (r: DeliveryRecord) => describeStatuses(r.id, r.status, r.destinations);

/**
 * Everything that is wrong, one line per reference: a workflow that did not end with a result,
 * an end that differs from the simulator's record, a reference with no delivery or with more
 * than one, and a delivery whose reference has no workflow.
 */
async function problemsAtTheEnd(s: Scenario): Promise<{ problems: string[]; results: DeliveryResult[]; facts: string }> {
  const results = new Map<string, DeliveryResult | Error>();
  await pool(s.references, 20, async (reference) => {
    results.set(reference, await s.deliveries.result(reference).catch((e: Error) => e));
  });
  const sim = await s.procs.sim.deliveries();
  const truth = byReference(sim);
  const ours = new Set(s.references);
  const problems: string[] = [];
  for (const [reference, records] of truth) {
    if (!ours.has(reference)) problems.push(`${records.map((r) => r.id).join(', ')} at the simulator has no workflow (reference ${reference})`);
  }
  for (const reference of s.references) {
    const records = truth.get(reference) ?? [];
    const result = results.get(reference);
    if (records.length !== 1) problems.push(`${reference}: ${records.length} deliveries at the simulator (${records.map(describeRecord).join('; ')}), expected exactly one`);
    if (result instanceof Error || result === undefined) {
      problems.push(`${reference}: the workflow did not end with a result: ${result?.message ?? 'none'}`);
      continue;
    }
    const real = records[0];
    if (real && describeState(result) !== describeRecord(real)) problems.push(`${reference}: workflow ended ${describeState(result)}, simulator has ${describeRecord(real)}`);
  }
  const lastCreated = Math.max(...sim.map(({ delivery }) => Date.parse(delivery.created_at)));
  const creationCalls = (await s.procs.sim.requests()).filter((r) => r.method === 'POST' && r.path === '/v1/deliveries').length;
  const facts = `last delivery created at ${seconds(lastCreated - s.started)}; ${creationCalls} creation calls for ${sim.length} deliveries`;
  return { problems, results: [...results.values()].filter((r): r is DeliveryResult => !(r instanceof Error)), facts };
}

/** How the deliveries ended, e.g. `DELIVERED×170 CANCELED×20 with a FAILED destination×10`. */
function endings(results: DeliveryResult[]): string {
  const counts = new Map<string, number>();
  for (const r of results) {
    const key = `${r.status}${r.destinations.some((d) => d.status === 'FAILED') ? ' with a FAILED destination' : ''}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts].map(([k, n]) => `${k}×${n}`).join(', ');
}

/** Waits until the simulator has nothing left to send: no webhook in flight, held or waiting for a retry. */
async function webhooksSettled(s: Scenario, timeoutMs: number): Promise<{ attempts: WebhookAttempt[]; events: WebhookDispatch[] }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const w = await s.procs.sim.webhooks();
    const pending = w.events.filter((e) => e.state === 'sending' || e.state === 'retrying' || e.state === 'held');
    if (pending.length === 0 || Date.now() > deadline) return w;
    await sleep(500);
  }
}

/** Attempts that did not get a 2xx, and whether each of their events got through later. */
function failedAndRetried(w: { attempts: WebhookAttempt[]; events: WebhookDispatch[] }) {
  const key = (a: { event_id: string; copy: number }) => `${a.event_id}#${a.copy}`;
  const deliveredAt = new Map<string, number>();
  for (const a of w.attempts) if (a.outcome === 'delivered') deliveredAt.set(key(a), a.attempt);
  const failed = w.attempts.filter((a) => a.outcome !== 'delivered');
  const notRetried = failed.filter((a) => !((deliveredAt.get(key(a)) ?? 0) > a.attempt));
  const lost = w.events.filter((e) => e.state !== 'delivered');
  return { failed, notRetried, lost };
}

const describeAttempt = (a: WebhookAttempt) => `${a.event_id}#${a.copy} attempt ${a.attempt} (${a.status} of ${a.destination_id ?? a.delivery_id}): ${a.answer_status ?? a.error}`;
const describeEvent = (e: WebhookDispatch) => `${e.event_id}#${e.copy} ${e.status} of ${e.destination_id ?? e.delivery_id}: ${e.state} after ${e.attempts} attempt(s), last ${e.last_answer}`;

it(`${DELIVERIES} deliveries end in the provider's true state, once each, while the worker is killed with SIGKILL again and again`, async () => {
  const KILLS = 8;
  // 3 s per lifecycle step: a delivery takes 12-15 s from its creation.
  const s = await startScenario('surv-kill', { temporalAddress: testServerAddress().address, timeScale: 10, stepMs: 3_000 });

  // Some deliveries do not go the happy way at the provider: every tenth is cancelled by the
  // courier, and every tenth with two destinations fails its first one. Each is set while the
  // delivery is still CREATED or ASSIGNED, so it cannot race the simulator's own next step.
  const twists = new Map<string, 'cancel' | 'fail-first'>();
  s.references.forEach((r, i) => {
    if (i % 10 === 2) twists.set(r, 'cancel');
    if (i % 10 === 5) twists.set(r, 'fail-first');
  });
  let twisting = true;
  const twisted = new Set<string>();
  const twistErrors: string[] = [];
  s.diagnostics.push(() => `twists: ${twisted.size} applied, errors: ${twistErrors.join('; ') || 'none'}`);
  const twister = (async () => {
    while (twisting) {
      for (const { delivery } of await s.procs.sim.deliveries().catch(() => [])) {
        const reference = delivery.reference_number ?? '';
        const twist = twists.get(reference);
        if (!twist || twisted.has(reference) || !['CREATED', 'ASSIGNED'].includes(delivery.status)) continue;
        twisted.add(reference);
        const change = twist === 'cancel' ? { status: 'CANCELED' } : { destination_id: delivery.destinations[0]!.id, status: 'FAILED' };
        await s.procs.sim.advance(delivery.id, change).catch((e: Error) => twistErrors.push(`${reference}: ${e.message}`));
      }
      await sleep(300);
    }
  })();

  try {
    await startDeliveries(s);
    // The kills begin once creations reach the provider: they find workflows quoting, creating and following.
    await waitFor(s, 'first creations at the provider', async () => (await s.procs.sim.deliveries()).length >= 5, 120_000);
    for (let k = 1; k <= KILLS; k++) {
      await sleep(1_000 + Math.random() * 1_000); // the worker has been up and working for 1-2 s
      const [open, created] = [await countDeliveries(s, `ExecutionStatus = 'Running'`), (await s.procs.sim.deliveries()).length];
      const killedAt = Date.now();
      await s.procs.restartWorker('SIGKILL');
      s.mark(`kill ${k} (${open ?? '?'} workflows open, ${created} created at the provider), worker back after ${seconds(Date.now() - killedAt)}`);
    }
    expect(s.procs.starts.worker).toBe(KILLS + 1);
    await waitForAllToEnd(s, { stallMs: 60_000, timeoutMs: 180_000 });
  } finally {
    twisting = false;
    await twister;
  }
  const { problems, results, facts } = await problemsAtTheEnd(s);
  console.log(`worker killed ${KILLS} times with SIGKILL; ${twisted.size} twists; ${facts}; endings: ${endings(results)}\n  ${s.marks.join('\n  ')}`);
  expect(problems).toEqual([]);
  // The twists really happened, so the comparison covered more than the happy path.
  expect(results.filter((r) => r.status === 'CANCELED').length).toBeGreaterThan(0);
  expect(results.filter((r) => r.destinations.some((d) => d.status === 'FAILED')).length).toBeGreaterThan(0);
}, 300_000);

it(`${DELIVERIES} open deliveries carry on and end correctly after the Temporal server stops and starts again on its database file`, async () => {
  // A dev server of this test's own, on a SQLite file, so the shared one is never touched.
  const tools = await ensureServerTools();
  const { namespace } = testServerAddress();
  const dir = mkdtempSync(join(tmpdir(), 'survival-temporal-'));
  const dbFilename = join(dir, 'temporal.db');
  let server: DevServer = await startDevServer({ tools, dbFilename, namespace });
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  cleanups.push(() => server.stop());
  const port = Number(server.address.split(':')[1]);

  // The test is the courier here (no auto-advance), so no delivery can end before the restart
  // however long the creations take: all 200 stay open until it is over.
  const s = await startScenario('surv-temporal', { temporalAddress: server.address, timeScale: 20, stepMs: 0 });
  await startDeliveries(s);
  // The server goes down with half the deliveries created and the rest quoting or creating.
  await waitFor(s, `${DELIVERIES / 2} created at the provider`, async () => (await s.procs.sim.deliveries()).length >= DELIVERIES / 2, 120_000);
  expect(await countDeliveries(s, `ExecutionStatus = 'Running'`)).toBe(DELIVERIES);
  const worker = s.procs.worker!;
  const bridge = s.procs.bridge!;
  const courier = startCourier(s, 2_000);

  try {
    await sleep(500); // the first round of webhooks is on its way
    const stoppedAt = Date.now();
    await server.stop();
    s.mark('Temporal stopped');
    await sleep(3_000); // the courier keeps moving deliveries and the simulator keeps sending webhooks
    server = await startDevServer({ tools, dbFilename, port, namespace });
    s.mark(`Temporal serving again on the same file, ${seconds(Date.now() - stoppedAt)} after it stopped`);

    // Neither the worker nor the bridge is restarted: both reconnect to the server on their own.
    expect({ worker: worker.running, bridge: bridge.running }).toEqual({ worker: true, bridge: true });
    await waitForAllToEnd(s, { stallMs: 60_000, timeoutMs: 180_000 });
  } finally {
    await courier.stop();
  }
  expect(s.procs.starts).toEqual({ worker: 1, bridge: 1 });
  expect({ worker: worker.running, bridge: bridge.running }).toEqual({ worker: true, bridge: true });

  const { problems, results, facts } = await problemsAtTheEnd(s);
  const w = await webhooksSettled(s, 60_000);
  const { failed, notRetried, lost } = failedAndRetried(w);
  console.log(
    `Temporal restarted on ${dbFilename}; ${failed.length} of ${w.attempts.length} webhook attempts failed (${failed.filter((a) => a.answer_status === 503).length} answered 503) ` +
      `and were retried; ${facts}; endings: ${endings(results)}\n  ${s.marks.join('\n  ')}`,
  );
  expect(problems).toEqual([]);
  expect({ notRetried: notRetried.map(describeAttempt), lost: lost.map(describeEvent) }).toEqual({ notRetried: [], lost: [] });
}, 300_000);

it(`no webhook is lost while the bridge restarts: ${DELIVERIES} deliveries end in the provider's true state`, async () => {
  const s = await startScenario('surv-bridge', { temporalAddress: testServerAddress().address, timeScale: 20, stepMs: 3_000 });
  await startDeliveries(s);
  // Restart mid-stream: webhooks flowing, more deliveries still to be created.
  await waitFor(s, 'webhooks flowing', async () => (await s.procs.sim.webhooks()).attempts.length >= 50, 120_000);

  const restarts: { signal: NodeJS.Signals; from: number; to: number }[] = [];
  for (const signal of ['SIGKILL', 'SIGTERM'] as const) {
    if (restarts.length > 0) {
      // The next restart only once the new bridge has taken webhooks: two separate outages, not one long one.
      const back = restarts.at(-1)!.to;
      await waitFor(s, 'webhooks taken by the new bridge', async () => (await s.procs.sim.webhooks()).attempts.filter((a) => a.outcome === 'delivered' && Date.parse(a.sent_at) >= back).length >= 10, 60_000);
    }
    const from = Date.now();
    await s.procs.restartBridge(signal); // SIGTERM: as an operator stops it, the bridge closes and exits
    restarts.push({ signal, from, to: Date.now() });
    s.mark(`bridge restarted after ${signal}, down ${seconds(Date.now() - from)}`);
  }
  expect(s.procs.starts.bridge).toBe(3);

  await waitForAllToEnd(s, { stallMs: 60_000, timeoutMs: 180_000 });
  const { problems, results, facts } = await problemsAtTheEnd(s);
  const w = await webhooksSettled(s, 60_000);
  s.mark('webhooks settled');
  const { failed, notRetried, lost } = failedAndRetried(w);
  // An attempt that failed because of a restart started at most one webhook time-out before it.
  const during = (a: WebhookAttempt) => restarts.some((r) => Date.parse(a.sent_at) >= r.from - 5_000 && Date.parse(a.sent_at) <= r.to + 1_000);
  console.log(
    `bridge restarted twice; ${failed.length} of ${w.attempts.length} webhook attempts failed (${failed.filter(during).length} during the restarts, ` +
      `${failed.filter((a) => a.answer_status === 503).length} answered 503), all retried; ` +
      `${facts}; endings: ${endings(results)}\n  ${s.marks.join('\n  ')}`,
  );
  expect(problems).toEqual([]);
  // None lost: every event the simulator sent got a 2xx in the end, every failed attempt was retried.
  expect({ notRetried: notRetried.map(describeAttempt), lost: lost.map(describeEvent) }).toEqual({ notRetried: [], lost: [] });
  // ...and the restarts really did refuse some attempts, which the provider's retries carried over.
  expect(failed.filter(during).length).toBeGreaterThan(0);
}, 300_000);
