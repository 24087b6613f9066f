/**
 * The pacing gate with real worker processes, the simulator and the test's dev server: exactly
 * one delivery per order when workers die mid-creation and the provider ignores Idempotency-Key;
 * few calls during an outage; one poison order stops nobody and can be cancelled; workers that
 * are all down longer than a slot, or whose clocks are off, never make the provider refuse a call.
 * Small counts (the benchmark runs hundreds of orders and 50+ kills). With RECORD_HISTORIES=<folder>,
 * the gate's history of the outage test is saved for the replay test.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { connectClient } from '../../temporal/client-connection';
import { DeliveryClient } from '../../client/delivery-client';
import { createSimulator, type Simulator } from '../../simulator/server';
import { gateStatusQuery, type GateAnswer } from '../../contract/gate-messages';
import { gateWorkflowId } from '../../contract/workflow-ids';
import type { DeliveryOrder, DeliveryState } from '../../contract/delivery-types';
import { deliveryWorkflowId } from '../../contract/workflow-ids';
import { deliveryRequest, destination } from '../fixtures/orders';
import { hasLoneMarkerTask, recordHistories, unreplayable } from '../helpers/histories';
import { ENTRY, ProcessGroup, type RunningProcess } from '../../scripts/processes';
import { eventually } from '../helpers/stack';
import { busiestWindow } from '../helpers/rolling-windows';
import { testDeployment, testServerAddress, uniqueTaskQueue } from '../helpers/temporal';
import { workflowBundle } from '../helpers/workers';

const SCALE = 60;
const KEY = 'sk_test_gate_survival';
const LIMITS = 'creations=20/1000ms,quotes=100/10000ms,other=600/1000ms';
const SKEWED_CLOCK = join(__dirname, '..', 'helpers', 'skewed-clock.cjs');

let group: ProcessGroup;
let connection: Connection;
let temporal: Client;
let bundleFile: string;

beforeAll(async () => {
  group = new ProcessGroup({ maxOutputChars: 200_000 });
  connection = await connectClient({ address: testServerAddress().address });
  temporal = new Client({ connection, namespace: testServerAddress().namespace });
  bundleFile = join(tmpdir(), `gate-survival-${process.pid}.js`);
  writeFileSync(bundleFile, (await workflowBundle()).code);
});
afterAll(async () => {
  await group?.stopAll();
  await connection?.close();
});

/**
 * What a test started, stopped after it even when it timed out: its body may still be awaiting,
 * and its workers, simulator and SIGKILL loop would otherwise run on into the next tests.
 */
const leftovers = { sims: [] as Simulator[], over: new AbortController() };
function simulator(...args: Parameters<typeof createSimulator>): Simulator {
  const sim = createSimulator(...args);
  leftovers.sims.push(sim);
  return sim;
}
afterEach(async () => {
  leftovers.over.abort();
  leftovers.over = new AbortController();
  await group.stopAll();
  await Promise.all(leftovers.sims.splice(0).map((sim) => sim.close()));
});

function order(n: number): DeliveryOrder {
  const { reference_number: _r, ...o } = deliveryRequest({ destinations: [destination(0, { location: { last_name: 'S', company: '', phone: '+4915112345600', address: `Crashweg ${n}, 10115 Berlin` } })] });
  return o;
}

async function setUp(sim: Simulator, callTimeoutMs: number, limits = LIMITS, clockOffsetsMs = [0, 0], extraEnv: Record<string, string> = {}) {
  const { url } = await sim.listen(0, '127.0.0.1');
  const taskQueue = uniqueTaskQueue('survive');
  const env = {
    TEMPORAL_ADDRESS: testServerAddress().address,
    TEMPORAL_NAMESPACE: testServerAddress().namespace,
    DELIVERY_TASK_QUEUE: taskQueue,
    ...testDeployment(taskQueue),
    DELIVERY_API_URL: url,
    DELIVERY_API_KEY: KEY,
    DELIVERY_API_TIMEOUT_MS: String(callTimeoutMs - 500),
    PROVIDER_RATE_LIMITS: limits,
    PROVIDER_PACING_MARGIN_MS: '10',
    PROVIDER_QUOTE_MIN_REMAINING_MS: '1000',
    PROVIDER_CALL_TIMEOUT_MS: String(callTimeoutMs),
    WORKER_WORKFLOW_BUNDLE: bundleFile,
    LOG_LEVEL: 'WARN',
    ...extraEnv,
  };
  let n = 0;
  const startWorker = (offsetMs = 0) =>
    group.start({ name: `worker#${++n}`, entry: ENTRY.worker.entry, ready: ENTRY.worker.ready, env: offsetMs ? { ...env, NODE_OPTIONS: `--require ${SKEWED_CLOCK}`, TEST_CLOCK_OFFSET_MS: String(offsetMs) } : env });
  const workers = await Promise.all(clockOffsetsMs.map((o) => startWorker(o)));
  return { taskQueue, workers, startWorker, client: new DeliveryClient({ temporal, taskQueue, followUp: { endGraceMs: 0 } }) };
}

/** The arguments of the named signals in a history (JSON payloads: these tests use no codec). */
function signals<T>(events: proto.api.history.v1.IHistoryEvent[], name: string): T[] {
  return events.flatMap((e) => (e.workflowExecutionSignaledEventAttributes?.signalName === name ? [JSON.parse(Buffer.from(e.workflowExecutionSignaledEventAttributes.input!.payloads![0]!.data!).toString()) as T] : []));
}

function oneDeliveryPerReference(sim: Simulator, references: string[]): { duplicated: string[]; missing: string[] } {
  const count = new Map<string, number>();
  for (const d of sim.deliveries()) count.set(d.delivery.reference_number ?? '', (count.get(d.delivery.reference_number ?? '') ?? 0) + 1);
  return { duplicated: references.filter((r) => (count.get(r) ?? 0) > 1), missing: references.filter((r) => !count.has(r)) };
}

it('creates exactly one delivery per order, and ends each in the provider\'s state, while workers are SIGKILLed mid-creation at a provider that ignores Idempotency-Key', async () => {
  // The provider creates, then holds its answer back 300 ms: a kill in between loses the answer.
  const sim = simulator({ apiKeys: [KEY], timeScale: SCALE, autoAdvanceMs: 30_000, faults: { ignore_idempotency_keys: true, latency_ms: 300 } });
  // Two creations a second: at the contract's 20 (scaled), the gate sends all 16 in one burst, so
  // there are two moments to kill at in all, and the run falls short of its kills (seen in CI, 2 of 4).
  const { workers, startWorker, client } = await setUp(sim, 3_000, LIMITS.replace('creations=20/', 'creations=2/'));
  // Small by default; the run of record of #15 (≥ 50 kills): GATE_SURVIVAL_CRASH_ORDERS=120 GATE_SURVIVAL_KILLS=60.
  const killsWanted = Number(process.env.GATE_SURVIVAL_KILLS ?? 8);
  const references = Array.from({ length: Number(process.env.GATE_SURVIVAL_CRASH_ORDERS ?? 16) }, (_, i) => `CRASH-${Date.now().toString(36)}-${i}`);
  const kills = { created_unanswered: 0, answered: 0 };
  let seenDeliveries = 0;
  let seenLog = 0;
  let done = false;
  const alive = new Set<RunningProcess>(workers);
  const over = leftovers.over.signal;
  const killer = (async () => {
    // Alternately: a kill as soon as the provider has created a delivery (its answer still held
    // back), and as soon as an answer went out (before the activity completed).
    for (let n = 0; !done && !over.aborted && kills.created_unanswered + kills.answered < killsWanted; ) {
      await new Promise((r) => setTimeout(r, 5));
      // No worker to kill yet (all killed, replacements not ready): a creation now, by a
      // replacement that polls before its ready line, stays a moment to kill at once one is.
      if (alive.size === 0) continue;
      const moment = n % 2 === 0 ? 'created_unanswered' : 'answered';
      const created = sim.deliveries().length > seenDeliveries;
      const answered = sim.requestLog(seenLog).some((e) => e.method === 'POST' && e.path === '/v1/deliveries');
      seenDeliveries = sim.deliveries().length;
      seenLog = sim.requestLog().length;
      if (!(moment === 'created_unanswered' ? created : answered)) continue;
      const victim = [...alive][n % alive.size]!;
      alive.delete(victim);
      await victim.kill('SIGKILL');
      kills[moment]++;
      n++;
      // After the test (it timed out), a replacement stopped while starting is no failure of the next test's.
      void startWorker().then(
        (w) => (over.aborted ? void w.stop() : alive.add(w)),
        (err: unknown) => {
          if (!over.aborted) throw err;
        },
      );
    }
  })();
  await Promise.all(references.map((reference, i) => client.startDelivery(order(i), { reference, followUp: { quietMs: 1_000 } })));
  // Every workflow follows its delivery to the end through reconciliation (no webhooks here).
  const results = new Map<string, DeliveryState>();
  for (const r of references) results.set(r, (await temporal.workflow.getHandle(deliveryWorkflowId(r)).result()) as DeliveryState);
  done = true;
  await killer;

  console.log(`${references.length} orders, ${JSON.stringify(kills)} SIGKILLs`);
  expect(kills.created_unanswered + kills.answered).toBeGreaterThanOrEqual(Math.min(4, killsWanted));
  expect(oneDeliveryPerReference(sim, references)).toEqual({ duplicated: [], missing: [] });
  // No orphans: every delivery the provider holds is the one its workflow knows.
  expect(sim.deliveries().filter((d) => results.get(d.delivery.reference_number ?? '')?.deliveryId !== d.delivery.id)).toEqual([]);
  // No wrong end states: the delivery's and each destination's status as the provider has them.
  for (const r of references) {
    const truth = sim.deliveries().find((d) => d.delivery.reference_number === r)!.delivery;
    const mine = results.get(r)!;
    const statuses = (s: { status?: string; destinations: { id: string; status: string }[] }) => ({ status: s.status, destinations: s.destinations.map((d) => [d.id, d.status]).sort() });
    expect({ reference: r, id: mine.deliveryId, ...statuses(mine) }).toEqual({ reference: r, id: truth.id, ...statuses(truth) });
  }
}, process.env.GATE_SURVIVAL_KILLS ? 900_000 : 240_000);

it('makes only a few probe calls during a provider outage, then creates every order once', async () => {
  const sim = simulator({ apiKeys: [KEY], timeScale: SCALE });
  const { client } = await setUp(sim, 5_000);
  const references = Array.from({ length: 30 }, (_, i) => `OUTAGE-${Date.now().toString(36)}-${i}`);
  sim.setFaults({ error_rate: 1 }); // the provider is down before the first call
  const outageStart = Date.now();
  await Promise.all(references.map((reference, i) => client.startDelivery(order(100 + i), { reference, followUp: { quietMs: 3_600_000 } })));
  await new Promise((r) => setTimeout(r, 4_000)); // four provider minutes
  const outageEnd = Date.now();
  sim.setFaults({ error_rate: 0 });
  await eventually('every order to be created after the outage', () => (oneDeliveryPerReference(sim, references).missing.length === 0 ? true : undefined), 60_000);

  const during = sim.requestLog().filter((e) => Date.parse(e.time) >= outageStart && Date.parse(e.time) < outageEnd);
  // The first wave (one quote per order, all within the quote budget) goes out before any answer
  // can show the outage, so on a fast machine all 30 are in it. After that, orders retrying on
  // their own would spend the whole budget (100 per provider window) in the first second; the
  // limiter pauses the family and probes with one call at a time, with growing pauses.
  const retries = during.length - references.length;
  expect(retries).toBeLessThanOrEqual(8);
  expect(oneDeliveryPerReference(sim, references)).toEqual({ duplicated: [], missing: [] });
}, 180_000);

it('resumes quoting within a quarter of the shortest window once the provider is back', async () => {
  const sim = simulator({ apiKeys: [KEY], timeScale: SCALE });
  // Outage probes back off up to a quarter of the shortest window (creations: 250 ms here), not the quotes' 30 s.
  const { client, taskQueue } = await setUp(sim, 5_000, 'creations=20/1000ms,quotes=100/120000ms,other=600/1000ms');
  const stamp = Date.now().toString(36);
  sim.setFaults({ error_rate: 1 });
  const references = [0, 1, 2, 3].map((i) => `BACK-${stamp}-${i}`);
  await Promise.all(references.map((reference, i) => client.startDelivery(order(300 + i), { reference, followUp: { quietMs: 3_600_000 } })));
  const gate = temporal.workflow.getHandle(gateWorkflowId(taskQueue));
  await eventually('the gate to declare an outage', async () => (await gate.query(gateStatusQuery)).outage || undefined, 60_000);
  await new Promise((r) => setTimeout(r, 3_000)); // long enough for the probes' pause to reach its cap
  sim.setFaults({ error_rate: 0 });
  const back = Date.now();
  await eventually('every order to be created after the outage', () => (oneDeliveryPerReference(sim, references).missing.length === 0 ? true : undefined), 60_000);

  const firstQuote = sim.requestLog().find((e) => e.path === '/v1/quotes' && e.status === 200 && Date.parse(e.time) >= back);
  const quotedAfterMs = Date.parse(firstQuote!.time) - back;
  console.log(`first quote ${quotedAfterMs} ms after the provider was back`);
  expect(quotedAfterMs).toBeLessThan(3_000);
  expect(await gate.query(gateStatusQuery)).toMatchObject({ outage: false });
  expect(oneDeliveryPerReference(sim, references)).toEqual({ duplicated: [], missing: [] });
  if (process.env.RECORD_HISTORIES) await recordHistories(process.env.RECORD_HISTORIES, 'pacing gate after an outage', [gate]);
}, 180_000);

/** The most calls the provider counted in any rolling window of `windowMs` (429s are not counted). */
function mostInAnyWindow(sim: Simulator, path: string, windowMs: number): number {
  const times = sim
    .requestLog()
    .filter((e) => e.method === 'POST' && e.path === path && e.status !== 429)
    .map((e) => Date.parse(e.time));
  return busiestWindow(times, windowMs);
}

it('creates the rest of a backlog while one order always gets a 500, never held back by it, and cancels that order', async () => {
  const sim = simulator({ apiKeys: [KEY], timeScale: SCALE });
  const { client, taskQueue } = await setUp(sim, 5_000);
  const gate = temporal.workflow.getHandle(gateWorkflowId(taskQueue));
  const stamp = Date.now().toString(36);
  const poison = `P500-${stamp}`;
  const refused = `P422-${stamp}`;
  const references = Array.from({ length: 40 }, (_, i) => `PACE-${stamp}-${i}`);
  sim.setFaults({ reference_faults: { [poison]: 500, [refused]: 422 } });
  // The poison orders ask first, so a gate that let them hold the queue would show it.
  await client.startDelivery(order(500), { reference: poison });
  await client.startDelivery(order(501), { reference: refused });
  const t0 = Date.now();
  await Promise.all(references.map((reference, i) => client.startDelivery(order(600 + i), { reference, followUp: { quietMs: 3_600_000 } })));
  const allAsked = Date.now(); // each start returns once its workflow's first task ran (the start check)
  await eventually('the 40 other orders to be created', () => (oneDeliveryPerReference(sim, references).missing.length === 0 ? true : undefined), 60_000);
  const createdAt = sim.deliveries().filter((d) => references.includes(d.delivery.reference_number ?? '')).map((d) => Date.parse(d.delivery.created_at));
  // The pace itself is a benchmark figure (`npm run bench -- limits`, phase poison: the others' drain ÷ their least time).
  console.log(`40 orders created ${Math.max(...createdAt) - t0} ms after their start, next to a poison order`);
  expect(sim.requestLog().filter((e) => e.status === 429)).toEqual([]);

  // The 422 ends with the provider's reason; the 500 keeps trying, in a growing backoff, until cancelled.
  await expect(temporal.workflow.getHandle(deliveryWorkflowId(refused)).result()).rejects.toMatchObject({
    cause: { message: expect.stringMatching(/reference_number.*injected fault: refused for this reference/) },
  });
  const refusedState = (await temporal.workflow.getHandle(deliveryWorkflowId(refused)).query('status')) as DeliveryState;
  expect(refusedState.deliveryId).toBeUndefined();
  const poisonTries = () => sim.requestLog().filter((e) => e.method === 'POST' && e.path === '/v1/deliveries' && e.status === 500).map((e) => Date.parse(e.time));
  const attempts = () => poisonTries().length;
  const triesAfter = () => poisonTries().filter((t) => t >= allAsked).sort((a, b) => a - b);
  await eventually('the poison order to have been tried again once the others had asked', () => (triesAfter().length >= 1 ? true : undefined), 30_000);
  // Not held: the others' creations went out while the poison order waited for its next try (a queue it held would retry it first).
  expect(Math.min(...createdAt)).toBeLessThan(triesAfter()[0]!);
  expect(await gate.query(gateStatusQuery)).toMatchObject({ outage: false });
  const final = await client.cancelDelivery(poison);
  expect(final.cancellation?.outcome).toBe('before_creation');
  expect(final.deliveryId).toBeUndefined();
  expect(attempts()).toBeLessThanOrEqual(8);
  expect(oneDeliveryPerReference(sim, [poison, refused]).missing).toEqual([poison, refused]);
}, 180_000);

it('cancels orders while their creation is asked of the gate, creates none of them, and leaves histories that replay', async () => {
  // A cancellation there withdraws by local activity, then waits for the gate's answer (a signal).
  // On replay, that activity's result can come in one activation with the answer: a history that
  // only replays one way fails the status query of the cancelled delivery. Before the fix, 8 of 30.
  const sim = simulator({ apiKeys: [KEY], timeScale: SCALE });
  const { client } = await setUp(sim, 5_000);
  const references = Array.from({ length: 16 }, (_, i) => `WAIT-${Date.now().toString(36)}-${i}`);
  sim.setFaults({ reference_faults: Object.fromEntries(references.map((r) => [r, 500])) });
  const outcomes = await Promise.all(
    references.map(async (reference, i) => {
      await client.startDelivery(order(800 + i), { reference });
      await new Promise((r) => setTimeout(r, 200 + ((i * 397) % 3_000))); // before its first task, while waiting, while the call is out
      return (await client.cancelDelivery(reference)).cancellation?.outcome;
    }),
  );
  expect(outcomes).toEqual(references.map(() => 'before_creation'));
  expect(oneDeliveryPerReference(sim, references).missing).toEqual(references);
  const handles = references.map((r) => temporal.workflow.getHandle(deliveryWorkflowId(r)));
  expect(await unreplayable(handles)).toEqual([]);
  if (process.env.RECORD_HISTORIES) {
    const lone = [];
    for (const h of handles) if (lone.length < 2 && hasLoneMarkerTask(await h.fetchHistory())) lone.push(h);
    await recordHistories(process.env.RECORD_HISTORIES, 'cancelled while its creation is asked of the gate', lone.length ? lone : handles.slice(0, 1));
  }
}, 240_000);

it('continues the gate as new mid-backlog with no task refused: orders told to ask again ask its next run', async () => {
  // An ask that reached the draining run during its last task would make the server refuse that
  // task (UnhandledCommand) and the worker replay the run's whole history before going on.
  const sim = simulator({ apiKeys: [KEY], timeScale: SCALE });
  const { taskQueue, client } = await setUp(sim, 3_000, LIMITS, [0, 0], { PROVIDER_PACING_GATE_HISTORY_LIMIT: '200' });
  const references = Array.from({ length: 80 }, (_, i) => `CAN-${Date.now().toString(36)}-${i}`);
  await Promise.all(references.map((reference, i) => client.startDelivery(order(900 + i), { reference, followUp: { quietMs: 3_600_000 } })));
  await eventually('every order to be created', () => (oneDeliveryPerReference(sim, references).missing.length === 0 ? true : undefined), 120_000);
  expect(oneDeliveryPerReference(sim, references)).toEqual({ duplicated: [], missing: [] });
  expect(sim.requestLog().filter((e) => e.status === 429)).toEqual([]);
  const runs = await eventually('the gate to have continued as new twice', async () => {
    const found: (WorkflowHandle & { runId: string })[] = [];
    for await (const w of temporal.workflow.list({ query: `WorkflowId = '${gateWorkflowId(taskQueue)}'` })) found.push(Object.assign(temporal.workflow.getHandle(w.workflowId, w.runId), { runId: w.runId }));
    return found.length >= 3 ? found : undefined;
  });
  // Refused tasks, and which asks reached the run meanwhile (those after the refusal, before the
  // next task). First asks of new orders can always arrive; asks made again (n > 1) must not.
  const histories = await Promise.all(runs.map(async (run) => ({ run, events: (await run.fetchHistory()).events ?? [] })));
  const refused: string[][] = []; // per refused task, the asks that reached its run meanwhile
  for (const { events } of histories) {
    events.forEach((e, i) => {
      if (e.workflowTaskFailedEventAttributes?.cause !== proto.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND) return;
      const next = events.findIndex((x, j) => j > i && x.workflowTaskStartedEventAttributes);
      refused.push(signals<{ from: string; n: number }[]>(events.slice(i + 1, next < 0 ? undefined : next), 'gateRequest').flat().map((r) => `${r.from}#${r.n}`));
    });
  }
  console.log(`gate runs: ${runs.length}; tasks refused: ${refused.length}, during first asks only: ${refused.filter((asks) => asks.every((a) => a.endsWith('#1'))).length}`);
  expect(refused.flat().filter((a) => !a.endsWith('#1'))).toEqual([]);
  expect(await unreplayable(runs)).toEqual([]);
  if (process.env.RECORD_HISTORIES) {
    // A run that continued as new, and an order it told to ask again.
    const continued = histories.find((h) => h.events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes)!.run;
    let toldAgain: WorkflowHandle | undefined;
    for (const r of references) {
      const h = temporal.workflow.getHandle(deliveryWorkflowId(r));
      if (!toldAgain && signals<GateAnswer>((await h.fetchHistory()).events ?? [], 'gateAnswer').some((a) => 'again' in a)) toldAgain = h;
    }
    await recordHistories(process.env.RECORD_HISTORIES, 'gate continued as new mid-backlog', [continued, toldAgain!]);
  }
}, 240_000);

it.each([
  ['are all stopped for longer than a slot while calls are scheduled, then restarted', [0, 0]],
  ['have clocks 3 s ahead and 3 s behind', [3_000, -3_000]],
])('never exceeds a rolling window nor gets a 429 when the workers %s', async (what, offsets) => {
  const sim = simulator({ apiKeys: [KEY], timeScale: SCALE });
  const { workers, startWorker, client } = await setUp(sim, 3_000, LIMITS, offsets);
  const references = Array.from({ length: 60 }, (_, i) => `WIN-${Date.now().toString(36)}-${i}`);
  await Promise.all(references.map((reference, i) => client.startDelivery(order(700 + i), { reference, followUp: { quietMs: 3_600_000 } })));
  if (what.startsWith('are all stopped')) {
    await eventually('the first creations', () => (sim.deliveries().length >= 5 ? true : undefined), 60_000);
    await Promise.all(workers.map((w) => w.kill('SIGKILL')));
    await new Promise((r) => setTimeout(r, 10_000)); // past every scheduled call's schedule-to-start (its delay + 5 s)
    await Promise.all([startWorker(), startWorker()]);
  }
  await eventually('every order to be created', () => (oneDeliveryPerReference(sim, references).missing.length === 0 ? true : undefined), 90_000);
  expect(oneDeliveryPerReference(sim, references)).toEqual({ duplicated: [], missing: [] });
  expect(sim.requestLog().filter((e) => e.status === 429)).toEqual([]);
  expect(mostInAnyWindow(sim, '/v1/deliveries', 1_000)).toBeLessThanOrEqual(20);
}, 240_000);
