/**
 * Pacing at the provider's limits, everything real: the simulator enforces its strict rolling
 * windows (time-scaled), two sets of workers share one task queue, and the pacing gate makes the
 * calls. Figures at scale are in `npm run bench -- limits`; these prove the rules.
 */
import { gateStatusQuery } from '../../contract/gate-messages';
import { gateWorkflowId } from '../../contract/workflow-ids';
import type { DeliveryOrder } from '../../contract/delivery-types';
import { deliveryWorkflowId } from '../../contract/workflow-ids';
import { createProviderActivities } from '../../activities/provider-activities';
import { ProviderClient } from '../../provider/client';
import { InvalidInputError } from '../../client/delivery-client';
import { deliveryRequest, destination } from '../fixtures/orders';
import { allCreated, createdDelivery, eventually, SANDBOX_KEY, startStack, type Stack } from '../helpers/stack';
import { startWorkers, type RunningWorkers } from '../helpers/workers';
import { rejectionOf } from '../helpers/rejection';

const SCALE = 60; // the provider's minute is one second
const scaled = { creations: { limit: 20, windowMs: 1_000 }, quotes: { limit: 100, windowMs: 10_000 }, other: { limit: 600, windowMs: 1_000 } };
const pacing = { limits: scaled, marginMs: 20, quoteMinRemainingMs: 1_000 };

let run = 0;
/** An order of its own (a distinct address, so a distinct quote), unless `twinOf` is given. */
function order(n: number, food = false): DeliveryOrder {
  const { reference_number: _r, ...o } = deliveryRequest({ is_food: food, destinations: [destination(0, { location: { last_name: 'R', company: '', phone: '+4915112345600', address: `Testweg ${run}-${n}, 10115 Berlin` } })] });
  return o;
}

function posts(stack: Stack, path: string) {
  return stack.sim.requestLog().filter((e) => e.method === 'POST' && e.path === path);
}

/** The gate's status once no call is out: the provider has a delivery a moment before the gate hears of it. */
async function gateIdle(stack: Stack) {
  const gate = stack.temporal.workflow.getHandle(gateWorkflowId(stack.workers.taskQueue));
  return eventually(
    'the gate to have no call out',
    async () => {
      const status = await gate.query(gateStatusQuery);
      return status.inFlight === 0 ? status : undefined;
    },
    10_000,
  );
}


describe('pacing through the gate', () => {
  let stack: Stack;
  let second: RunningWorkers;

  beforeAll(async () => {
    stack = await startStack({ simulator: { timeScale: SCALE }, pacing });
    const provider = new ProviderClient({ baseUrl: stack.simUrl, apiKey: SANDBOX_KEY, timeoutMs: 5_000 });
    second = await startWorkers(createProviderActivities(provider), { taskQueue: stack.workers.taskQueue, pacing });
  });
  afterAll(async () => {
    await second?.stop();
    await stack?.stop();
  });
  beforeEach(() => run++);

  it("starts no gate before its account's first order (as for any account), then runs it with the asking worker's settings", async () => {
    const gate = stack.temporal.workflow.getHandle(gateWorkflowId(stack.workers.taskQueue));
    expect(await gate.describe().then(() => 'running', (err: Error) => err.name)).toBe('WorkflowNotFoundError');
    const reference = `DSP-${run}-first`;
    await stack.deliveries.startDelivery(order(0), { reference });
    await allCreated(stack, [reference], 30_000);
    expect(await gate.query(gateStatusQuery)).toMatchObject({ config: { limits: { creations: scaled.creations, quotes: scaled.quotes }, marginMs: pacing.marginMs, quoteMinRemainingMs: pacing.quoteMinRemainingMs } });
  });

  it('keeps every rolling window with two worker sets, gets no 429, serves food first and asks one quote per distinct order', async () => {
    // 60 orders: 50 non-food started first, then 10 food; orders 5/6, 15/16, 25/26 are identical.
    // At 20 creations a window, a backlog forms for three windows.
    const orders = Array.from({ length: 60 }, (_, i) => ({ reference: `DSP-${run}-${i}`, order: order([6, 16, 26].includes(i) ? i - 1 : i, i >= 50) }));
    const quotesBefore = posts(stack, '/v1/quotes').length;
    await Promise.all(orders.map((o) => stack.deliveries.startDelivery(o.order, { reference: o.reference })));
    const created = await allCreated(
      stack,
      orders.map((o) => o.reference),
      90_000,
    );

    expect(created).toHaveLength(60); // exactly one delivery per order
    const refused = stack.sim.requestLog().filter((e) => e.status === 429);
    expect(refused).toEqual([]);
    // The food orders, started last, were not left at the back of the queue.
    const rank = new Map([...created].sort((a, b) => a.delivery.created_at.localeCompare(b.delivery.created_at)).map((d, i) => [d.delivery.reference_number, i]));
    const lastTen = [...rank.entries()].filter(([, i]) => i >= 50).map(([r]) => r);
    expect(orders.filter((o) => o.order.is_food && lastTen.includes(o.reference))).toEqual([]);
    // ...also because their tasks went first in Temporal's queues (the server's priority matcher).
    const priorityOf = async (reference: string) => (await stack.temporal.workflow.getHandle(deliveryWorkflowId(reference)).describe()).priority?.priorityKey;
    expect([await priorityOf(orders[55]!.reference), await priorityOf(orders[5]!.reference)]).toEqual([1, 3]);
    // 57 distinct orders, 57 quotes: the three twins reused their twin's quote.
    expect(posts(stack, '/v1/quotes').length - quotesBefore).toBe(57);
    const twin = await stack.deliveries.getStatus(orders[16]!.reference);
    const original = await stack.deliveries.getStatus(orders[15]!.reference);
    expect([twin, original].flatMap((s) => s.timeline.map((e) => e.note)).filter((n) => n?.startsWith('reusing the valid quote'))).toHaveLength(1);

    expect(await gateIdle(stack)).toMatchObject({ waiting: 0, inFlight: 0 });
  }, 120_000);

  it('uses a quote the order carries instead of asking again, and refuses one obtained for another order', async () => {
    const mine = order(1, true);
    const quote = await stack.deliveries.quote(mine);
    expect(quote.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    const quotesBefore = posts(stack, '/v1/quotes').length;

    const rejected = await rejectionOf(stack.deliveries.startDelivery(order(2), { reference: `DSP-${run}-other`, quote: quote as Required<typeof quote> }));
    expect(rejected).toBeInstanceOf(InvalidInputError);
    expect((rejected as Error).message).toMatch(/quote: was obtained for other inputs than this order/);

    await stack.deliveries.startDelivery(mine, { reference: `DSP-${run}-carried`, quote: quote as Required<typeof quote> });
    const state = await createdDelivery(stack, `DSP-${run}-carried`);
    expect(state.quote?.price).toEqual(quote.price);
    expect(state.timeline.some((e) => e.note === 'using the quote the order carries: no quote asked for')).toBe(true);
    expect(posts(stack, '/v1/quotes')).toHaveLength(quotesBefore);
  });
});

describe('a 429 that happens after all', () => {
  let stack: Stack;

  beforeAll(async () => {
    // The workers believe in 6 creations a window; the provider allows 2 (window: 3 s real).
    stack = await startStack({
      simulator: { timeScale: SCALE, rateLimits: { creations: { limit: 2, windowMs: 180_000 } } },
      pacing: { ...pacing, limits: { ...scaled, creations: { limit: 6, windowMs: 3_000 } } },
    });
  });
  afterAll(async () => stack?.stop());

  it('pauses creations until Retry-After, no sooner, and still creates each delivery once', async () => {
    run++;
    const references = Array.from({ length: 6 }, (_, i) => `R429-${run}-${i}`);
    await Promise.all(references.map((reference, i) => stack.deliveries.startDelivery(order(i), { reference })));
    const created = await allCreated(stack, references, 60_000);
    expect(created).toHaveLength(6);

    const log = posts(stack, '/v1/deliveries').map((e) => ({ at: Date.parse(e.time), status: e.status }));
    const refused = log.filter((e) => e.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    const accepted = log.filter((e) => e.status < 300).map((e) => e.at);
    for (const r of refused) {
      // The provider's Retry-After: until the oldest accepted call inside the window leaves it.
      const inWindow = accepted.filter((t) => t > r.at - 3_000 && t <= r.at);
      const freeAt = Math.min(...inWindow) + 3_000;
      // Calls scheduled before the gate heard of the 429 may still go out up to the lead time (1 s) after it.
      const tooEarly = log.filter((e) => e.at > r.at + 1_500 && e.at < freeAt - 5);
      expect(tooEarly).toEqual([]);
    }
  }, 90_000);
});

describe('an order waiting for its creation slot', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await startStack({ pacing: { ...pacing, limits: { ...scaled, creations: { limit: 1, windowMs: 60_000 } } } });
  });
  afterAll(async () => stack?.stop());

  it('gives the place back when an order is cancelled while it waits for a creation slot: nothing is created', async () => {
    run++;
    // One creation a minute: the second order waits for the first one's slot.
    const first = `WAIT-${run}-0`;
    const waiting = `WAIT-${run}-1`;
    await stack.deliveries.startDelivery(order(0), { reference: first });
    await allCreated(stack, [first]);
    await stack.deliveries.startDelivery(order(1), { reference: waiting });
    await eventually('the 21st order to wait for a slot', async () => (await stack.deliveries.getStatus(waiting)).phase === 'creating' || undefined);
    const final = await stack.deliveries.cancelDelivery(waiting);
    expect(final.cancellation?.outcome).toBe('before_creation');
    expect(final.deliveryId).toBeUndefined();
    expect(stack.sim.deliveries().filter((d) => d.delivery.reference_number === waiting)).toEqual([]);
    expect(await gateIdle(stack)).toMatchObject({ waiting: 0, inFlight: 0 });
  });
});

describe('an order whose workflow is terminated while it waits for its creation', () => {
  let stack: Stack;

  beforeAll(async () => {
    // One creation every 3 s; a slot nobody reports back on would be held for over a minute.
    stack = await startStack({ pacing: { ...pacing, limits: { ...scaled, creations: { limit: 1, windowMs: 3_000 } } } });
  });
  afterAll(async () => stack?.stop());

  it('does not hold up the next order', async () => {
    run++;
    const [first, gone, next] = [0, 1, 2].map((i) => `GONE-${run}-${i}`) as [string, string, string];
    await stack.deliveries.startDelivery(order(0), { reference: first });
    await allCreated(stack, [first]);
    await stack.deliveries.startDelivery(order(1), { reference: gone });
    await eventually('the second order to wait for a slot', async () => (await stack.deliveries.getStatus(gone)).phase === 'creating' || undefined);
    // An operator terminates it: no cancellation, so it cannot give its place back itself.
    await stack.temporal.workflow.getHandle(deliveryWorkflowId(gone)).terminate('operator');
    await stack.deliveries.startDelivery(order(2), { reference: next });

    // The gate still creates the terminated order's delivery in its turn (it asked, and nobody
    // withdrew it), then the next order's; nothing waits for an answer that cannot be delivered.
    await allCreated(stack, [first, next], 15_000);
    expect(await gateIdle(stack)).toMatchObject({ waiting: 0, inFlight: 0 });
  });
});
