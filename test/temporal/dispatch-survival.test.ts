/**
 * Exactly one delivery per order when workers die mid-creation and the provider ignores
 * Idempotency-Key, and few calls during a provider outage. Real worker processes, the simulator,
 * the test's dev server; small counts (the benchmark runs hundreds of orders and 50+ kills).
 * With RECORD_HISTORIES=<folder>, the limiters' histories of the outage test that ends with the
 * provider's return are saved for the replay test.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DeliveryClient } from '../../client/delivery-client';
import { createSimulator, type Simulator } from '../../simulator/server';
import { LIMITED_FAMILIES, limiterStatusQuery, limiterWorkflowId } from '../../workflows/limiter-messages';
import type { CarriedQuote, DeliveryOrder, DeliveryState } from '../../workflows/messages';
import { deliveryWorkflowId } from '../../workflows/task-queues';
import { deliveryRequest, destination } from '../fixtures/orders';
import { recordHistories } from '../helpers/histories';
import { ENTRY, ProcessGroup, type RunningProcess } from '../helpers/processes';
import { eventually } from '../helpers/stack';
import { testServerAddress, uniqueTaskQueue } from '../helpers/temporal';
import { workflowBundle } from '../helpers/workers';

const SCALE = 60;
const KEY = 'sk_test_dispatch_survival';
const LIMITS = 'creations=20/1000ms,quotes=100/10000ms,other=600/1000ms';

let group: ProcessGroup;
let connection: Connection;
let temporal: Client;
let bundleFile: string;

beforeAll(async () => {
  group = new ProcessGroup(200_000);
  connection = await Connection.connect({ address: testServerAddress().address });
  temporal = new Client({ connection, namespace: testServerAddress().namespace });
  bundleFile = join(tmpdir(), `dispatch-survival-${process.pid}.js`);
  writeFileSync(bundleFile, (await workflowBundle()).code);
});
afterAll(async () => {
  await group?.stopAll();
  await connection?.close();
});

function order(n: number): DeliveryOrder {
  const { reference_number: _r, ...o } = deliveryRequest({ destinations: [destination(0, { location: { last_name: 'S', company: '', phone: '+4915112345600', address: `Crashweg ${n}, 10115 Berlin` } })] });
  return o;
}

async function setUp(sim: Simulator, callTimeoutMs: number, limits = LIMITS) {
  const { url } = await sim.listen(0, '127.0.0.1');
  const taskQueue = uniqueTaskQueue('survive');
  const env = {
    TEMPORAL_ADDRESS: testServerAddress().address,
    TEMPORAL_NAMESPACE: testServerAddress().namespace,
    DELIVERY_TASK_QUEUE: taskQueue,
    DELIVERY_API_URL: url,
    DELIVERY_API_KEY: KEY,
    DELIVERY_API_TIMEOUT_MS: String(callTimeoutMs - 500),
    PROVIDER_RATE_LIMITS: limits,
    PROVIDER_LIMIT_MARGIN_MS: '10',
    PROVIDER_QUOTE_MIN_REMAINING_MS: '1000',
    PROVIDER_CALL_TIMEOUT_MS: String(callTimeoutMs),
    WORKER_WORKFLOW_BUNDLE: bundleFile,
    LOG_LEVEL: 'WARN',
  };
  let n = 0;
  const startWorker = () => group.start({ name: `worker#${++n}`, entry: ENTRY.worker.entry, ready: ENTRY.worker.ready, env });
  const workers = await Promise.all([startWorker(), startWorker()]);
  return { taskQueue, workers, startWorker, client: new DeliveryClient({ temporal, taskQueue }) };
}

function oneDeliveryPerReference(sim: Simulator, references: string[]): { duplicated: string[]; missing: string[] } {
  const count = new Map<string, number>();
  for (const d of sim.deliveries()) count.set(d.delivery.reference_number ?? '', (count.get(d.delivery.reference_number ?? '') ?? 0) + 1);
  return { duplicated: references.filter((r) => (count.get(r) ?? 0) > 1), missing: references.filter((r) => !count.has(r)) };
}

it('creates exactly one delivery per order while workers are SIGKILLed mid-creation at a provider that ignores Idempotency-Key', async () => {
  // The provider creates, then holds its answer back 300 ms: a kill in between loses the answer.
  const sim = createSimulator({ apiKeys: [KEY], timeScale: SCALE, autoAdvanceMs: 30_000, faults: { ignore_idempotency_keys: true, latency_ms: 300 } });
  const { workers, startWorker, client } = await setUp(sim, 3_000);
  const references = Array.from({ length: 16 }, (_, i) => `CRASH-${Date.now().toString(36)}-${i}`);
  try {
    let kills = 0;
    let seen = 0;
    let done = false;
    const alive = new Set<RunningProcess>(workers);
    const killer = (async () => {
      while (!done && kills < 8) {
        await new Promise((r) => setTimeout(r, 5));
        const now = sim.deliveries().length;
        if (now === seen) continue;
        seen = now; // a delivery was just created; its answer is still held back
        const victim = [...alive][kills % alive.size];
        if (!victim) continue;
        alive.delete(victim);
        await victim.kill('SIGKILL');
        kills++;
        void startWorker().then((w) => alive.add(w));
      }
    })();
    await Promise.all(references.map((reference, i) => client.startDelivery(order(i), { reference, followUp: { quietMs: 1_000 } })));
    // Every workflow follows its delivery to the end through reconciliation (no webhooks here).
    const results = new Map<string, DeliveryState>();
    for (const r of references) results.set(r, (await temporal.workflow.getHandle(deliveryWorkflowId(r)).result()) as DeliveryState);
    done = true;
    await killer;

    expect(kills).toBeGreaterThanOrEqual(4);
    expect(oneDeliveryPerReference(sim, references)).toEqual({ duplicated: [], missing: [] });
    for (const r of references) {
      const truth = sim.deliveries().find((d) => d.delivery.reference_number === r)!.delivery;
      expect({ reference: r, id: results.get(r)!.deliveryId, status: results.get(r)!.status }).toEqual({ reference: r, id: truth.id, status: truth.status });
    }
  } finally {
    await group.stopAll();
    await sim.close();
  }
}, 240_000);

it('makes only a few probe calls during a provider outage, then creates every order once', async () => {
  const sim = createSimulator({ apiKeys: [KEY], timeScale: SCALE });
  const { client } = await setUp(sim, 5_000);
  const references = Array.from({ length: 30 }, (_, i) => `OUTAGE-${Date.now().toString(36)}-${i}`);
  try {
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
  } finally {
    await group.stopAll();
    await sim.close();
  }
}, 180_000);

it('resumes quoting as soon as the creations find the provider back, not after the quotes\' own probe pause', async () => {
  const sim = createSimulator({ apiKeys: [KEY], timeScale: SCALE });
  // Outage probes back off up to a quarter of the family's window: 30 s for these quotes, 250 ms for creations.
  const { client, taskQueue } = await setUp(sim, 5_000, 'creations=20/1000ms,quotes=100/120000ms,other=600/1000ms');
  const stamp = Date.now().toString(36);
  try {
    // Two orders carry a quote obtained before the outage, so they go straight to creation.
    const withQuote = await Promise.all([0, 1].map(async (i) => ({ order: order(200 + i), quote: (await client.quote(order(200 + i))) as CarriedQuote })));
    sim.setFaults({ error_rate: 1 });
    const references = [...withQuote.map((_, i) => `BACK-${stamp}-q${i}`), ...[0, 1, 2].map((i) => `BACK-${stamp}-${i}`)];
    await Promise.all([
      ...withQuote.map(({ order: o, quote }, i) => client.startDelivery(o, { reference: references[i]!, quote, followUp: { quietMs: 3_600_000 } })),
      ...[0, 1, 2].map((i) => client.startDelivery(order(300 + i), { reference: references[2 + i]!, followUp: { quietMs: 3_600_000 } })),
    ]);
    const status = (family: (typeof LIMITED_FAMILIES)[number]) => temporal.workflow.getHandle(limiterWorkflowId(taskQueue, family)).query(limiterStatusQuery);
    // Both families probe; the quotes' pause has doubled to several seconds.
    const quotes = await eventually(
      'the quotes paused for 5 s or more while the creations probe',
      async () => {
        const [q, c] = await Promise.all([status('quotes'), status('creations')]);
        return q.pausedForMs >= 5_000 && c.probing ? q : undefined;
      },
      60_000,
    );
    sim.setFaults({ error_rate: 0 });
    const back = Date.now();
    await eventually('every order to be created after the outage', () => (oneDeliveryPerReference(sim, references).missing.length === 0 ? true : undefined), 60_000);

    const firstQuote = sim.requestLog().find((e) => e.path === '/v1/quotes' && e.status === 200 && Date.parse(e.time) >= back);
    // The creations' next probe (at most 250 ms away) is answered, their limiter tells the quotes',
    // and its pause ends then, seconds before it would have by itself.
    const quotedAfterMs = Date.parse(firstQuote!.time) - back;
    console.log(`first quote ${quotedAfterMs} ms after the provider was back (the quotes' own pause had ${quotes.pausedForMs} ms left)`);
    expect(quotedAfterMs).toBeLessThan(Math.min(3_000, quotes.pausedForMs - 1_000));
    expect(oneDeliveryPerReference(sim, references)).toEqual({ duplicated: [], missing: [] });
    if (process.env.RECORD_HISTORIES) {
      // Both limiters' outage, probes and the provider's return, for the replay test.
      for (const family of LIMITED_FAMILIES) {
        await recordHistories(process.env.RECORD_HISTORIES, `provider limiter ${family} after an outage`, [temporal.workflow.getHandle(limiterWorkflowId(taskQueue, family))]);
      }
    }
  } finally {
    await group.stopAll();
    await sim.close();
  }
}, 180_000);
