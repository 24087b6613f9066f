/**
 * The Nexus service `deliveries` and the courier accounts, on the dev server, everything real: the
 * account registry read from its file, the delivery workers, the simulator holding one key per
 * account, and the example order workflow (examples/nexus-order-system/) on workers in the callers'
 * namespaces.
 *
 * - issue 53: quote and createDelivery name an account; an unknown account, one removed from the
 *   registry, and a start the workflow's start check would refuse are refused by the handler at
 *   once (BAD_REQUEST, InvalidDeliveryInput naming the account and the field), nothing started;
 * - issue 52: with endpoint account lists (DELIVERY_NEXUS_ENDPOINTS_FILE), two caller namespaces,
 *   each with its endpoint: a request naming an account outside its endpoint's list is refused
 *   (UNAUTHORIZED, AccountNotAllowed), whichever operation. Needs server 1.30+, which names the
 *   endpoint to the handler.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import { deliveryWorkflowId } from '../../contract/workflow-ids';
import { cancelDeliverySignal, type OrderInput } from '../../examples/nexus-order-system/workflows';
import { nexusEndpointsFromEnv } from '../../nexus/endpoint-accounts';
import { keyFingerprint } from '../../simulator/auth';
import type { Simulator } from '../../simulator/server';
import { eventually } from '../helpers/stack';
import { accountsSimulator, startAccountStack, writeAccountsFile, type AccountStack } from '../helpers/account-stack';
import { failureOf, newReference, order, request, start, startOrderSystem, type DeliverySide, type OrderSystem } from '../helpers/nexus-orders';
import { testServerAddress } from '../helpers/temporal';
import { setUpLocalNexus } from '../../scripts/nexus-setup';

jest.setTimeout(120_000);

const KEYS = { 'shop-a': 'key-shop-a', 'shop-b': 'key-shop-b' } as const;
type Shop = keyof typeof KEYS;

let sim: Simulator;
let dir: string;

const writeRegistry = (shops: Shop[]) => writeAccountsFile(dir, shops.map((id) => ({ id, baseUrl: sim.url, apiKey: { file: `${id}.key` } })));

beforeAll(async () => {
  ({ sim, dir } = await accountsSimulator(KEYS, 'delivery-nexus-accounts-'));
  writeRegistry(['shop-a', 'shop-b']);
});

afterAll(async () => {
  await sim.close();
});

/** The delivery side of an account stack, as the order-system helpers reach it. */
function sideOf(stack: AccountStack): DeliverySide {
  return {
    ...testServerAddress(),
    taskQueue: stack.workers.taskQueue,
    deliveries: stack.deliveries,
    temporal: stack.temporal,
    async driveToDelivered() {
      throw new Error('not used here');
    },
    async atProvider(reference) {
      const found = sim.deliveries().filter((d) => d.delivery.reference_number === reference);
      return { status: found[0]?.delivery.status ?? 'none', count: found.length };
    },
  };
}

/** The accounts under whose keys the simulator holds a delivery with this reference. */
function createdUnder(reference: string): Shop[] {
  const byFingerprint = new Map(Object.entries(KEYS).map(([shop, key]) => [keyFingerprint(key), shop as Shop]));
  return sim
    .deliveries()
    .filter((d) => d.delivery.reference_number === reference)
    .map((d) => byFingerprint.get(d.key_fingerprint)!);
}

/** No delivery workflow for the reference in the account, and nothing at the courier. */
async function nothingStarted(stack: AccountStack, reference: string, account: string): Promise<void> {
  await expect(stack.temporal.workflow.getHandle(deliveryWorkflowId(reference, account)).describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);
  expect(createdUnder(reference)).toEqual([]);
}

/** The caller's order workflow's history: the refused operation was never started (no NexusOperationStarted event). */
async function neverStarted(orders: OrderSystem, reference: string): Promise<void> {
  const history = await orders.client.workflow.getHandle(`order:${reference}`).fetchHistory();
  expect(history.events?.some((e) => e.nexusOperationScheduledEventAttributes)).toBe(true);
  expect(history.events?.some((e) => e.nexusOperationStartedEventAttributes)).toBe(false);
}

type Refusal = { operation: 'quote' | 'createDelivery'; handler: 'BAD_REQUEST' | 'UNAUTHORIZED'; type: string; field: string; message: string };

/** An order whose operation is refused as `want` says, at once and for good; the operation never started, nothing at Temporal or the courier. */
async function refused(stack: AccountStack, orders: OrderSystem, input: Omit<OrderInput, 'endpoint'> & { account: string }, want: Refusal) {
  const f = await failureOf(start(orders, input).then((h) => h.result()));
  expect(f.operation.operation).toBe(want.operation);
  expect(f.handler?.type).toBe(want.handler);
  expect(f.handler?.retryable).toBe(false);
  expect(f.application?.type).toBe(want.type);
  expect(f.application?.nonRetryable).toBe(true);
  expect(f.application?.details?.[0]).toEqual([{ field: want.field, message: expect.stringContaining(want.message) }]);
  await neverStarted(orders, input.reference);
  await nothingStarted(stack, input.reference, input.account);
  return f.application!;
}

const unknownAccount = (operation: Refusal['operation'], account: string): Refusal => ({ operation, handler: 'BAD_REQUEST', type: 'InvalidDeliveryInput', field: 'account', message: `no courier account ${account}` });

/** An order in `account` through the order system's endpoint, quoted first and created, then cancelled by the order: how it ended. */
async function quotedCreatedCancelled(stack: AccountStack, orders: OrderSystem, account: Shop) {
  const reference = newReference(`NXA-${account}`);
  stack.started.push(deliveryWorkflowId(reference, account));
  const handle = await start(orders, { reference, account, order: order() });
  // Not found until createDelivery has started it, after the quote.
  const phase = () => stack.deliveries.getStatus({ reference, account }).then((st) => st.phase, () => undefined);
  await eventually(`delivery ${reference} created in ${account}`, async () => ((await phase()) === 'following' ? true : undefined));
  expect(createdUnder(reference)).toEqual([account]);
  await handle.signal(cancelDeliverySignal);
  return { reference, outcome: await handle.result() };
}

describe('quote and createDelivery through Nexus name their account; what the worker does not serve is refused before anything starts', () => {
  let stack: AccountStack;
  let orders: OrderSystem;

  beforeAll(async () => {
    stack = await startAccountStack(join(dir, 'accounts.json'), 'nexus-accounts');
    orders = await startOrderSystem(sideOf(stack));
  }, 120_000);
  afterAll(async () => {
    await orders?.stop();
    await stack?.stop();
  });

  it('an order in shop-b is quoted and created with shop-b\'s key, the quote carried, and its status read with its account', async () => {
    const { reference, outcome } = await quotedCreatedCancelled(stack, orders, 'shop-b');
    expect(outcome.quote).toEqual(expect.objectContaining({ fingerprint: expect.stringMatching(/^[0-9a-f]{64}$/) }));
    expect(outcome.cancelled).toEqual(expect.objectContaining({ reference, phase: 'ended', status: 'CANCELED' }));
    // The carried quote was used: the delivery asked for none of its own.
    expect(outcome.cancelled?.timeline.filter((e) => e.note?.startsWith('quoted ')).length).toBe(1);
  });

  it('an unknown account: quote and createDelivery fail at once with BAD_REQUEST InvalidDeliveryInput on `account`, never retried, nothing started', async () => {
    await refused(stack, orders, { reference: newReference('NXA-NOBODY'), account: 'nobody', order: order() }, unknownAccount('quote', 'nobody'));
    await refused(stack, orders, { reference: newReference('NXA-NOBODY'), account: 'nobody', order: order(), quoteFirst: false }, unknownAccount('createDelivery', 'nobody'));
  });

  it('a start the workflow\'s start check would refuse (a notification endpoint the account does not have) fails createDelivery at once, nothing started', async () => {
    const input = { reference: newReference('NXA-NOTIFY'), account: 'shop-a', order: order(), quoteFirst: false, notify: { endpoint: 'orders' } };
    await refused(stack, orders, input, { operation: 'createDelivery', handler: 'BAD_REQUEST', type: 'InvalidDeliveryInput', field: 'notify.endpoint', message: 'no notification endpoint named orders' });
  });

  it('an account removed from the registry is refused from the reload on, as an unknown one', async () => {
    writeRegistry(['shop-a']);
    try {
      await eventually('shop-b removed', () => (stack.registry.get('shop-b') ? undefined : true));
      await refused(stack, orders, { reference: newReference('NXA-REMOVED'), account: 'shop-b', order: order() }, unknownAccount('quote', 'shop-b'));
      await refused(stack, orders, { reference: newReference('NXA-REMOVED'), account: 'shop-b', order: order(), quoteFirst: false }, unknownAccount('createDelivery', 'shop-b'));
    } finally {
      writeRegistry(['shop-a', 'shop-b']);
      await eventually('shop-b back', () => stack.registry.get('shop-b') && true);
    }
  });
});

describe('the Nexus endpoint as a boundary between accounts: two caller namespaces, each endpoint serving its own accounts', () => {
  const run = randomUUID().slice(0, 6);
  const endpointA = `deliveries-a-${run}`;
  const endpointB = `deliveries-b-${run}`;
  let stack: AccountStack;
  let ordersA: OrderSystem;
  let ordersB: OrderSystem;
  const setupLines: string[] = [];
  const notServed = (operation: Refusal['operation'], account: string, endpoint: string): Refusal => ({ operation, handler: 'UNAUTHORIZED', type: 'AccountNotAllowed', field: 'account', message: `account ${account}: not served through the Nexus endpoint ${endpoint}` });

  beforeAll(async () => {
    const file = join(dir, 'nexus-endpoints.json');
    writeFileSync(
      file,
      JSON.stringify({
        endpoints: [
          { name: endpointA, callerNamespace: 'orders-a', accounts: ['shop-a'] },
          { name: endpointB, callerNamespace: 'orders-b', accounts: ['shop-b'] },
        ],
      }),
    );
    stack = await startAccountStack(join(dir, 'accounts.json'), 'nexus-bounded', { nexusEndpoints: nexusEndpointsFromEnv({ DELIVERY_NEXUS_ENDPOINTS_FILE: file }) });
    // The endpoints and their namespaces made as `npm start` makes them from the file (the order systems below find them made).
    const env = { DELIVERY_NEXUS_ENDPOINTS_FILE: file, DELIVERY_TASK_QUEUE: stack.workers.taskQueue };
    const saved = { ...process.env };
    Object.assign(process.env, env);
    try {
      await setUpLocalNexus(testServerAddress().address, testServerAddress().namespace, (line) => setupLines.push(line));
    } finally {
      for (const k of Object.keys(env)) if (saved[k] === undefined) delete process.env[k];
      Object.assign(process.env, saved);
    }
    ordersA = await startOrderSystem(sideOf(stack), { namespace: 'orders-a', endpoint: endpointA });
    ordersB = await startOrderSystem(sideOf(stack), { namespace: 'orders-b', endpoint: endpointB });
  }, 180_000);
  afterAll(async () => {
    await ordersA?.stop();
    await ordersB?.stop();
    await stack?.stop();
  });

  it('each namespace has its own account\'s deliveries quoted and made through its endpoint', async () => {
    expect(setupLines).toEqual([
      expect.stringMatching(new RegExp(`^Nexus endpoint ${endpointA} → .*; order systems' namespace orders-a; accounts shop-a$`)),
      expect.stringMatching(new RegExp(`^Nexus endpoint ${endpointB} → .*; order systems' namespace orders-b; accounts shop-b$`)),
    ]);
    const a = await quotedCreatedCancelled(stack, ordersA, 'shop-a');
    const b = await quotedCreatedCancelled(stack, ordersB, 'shop-b');
    expect(a.outcome.cancelled?.status).toBe('CANCELED');
    expect(b.outcome.cancelled?.status).toBe('CANCELED');
  });

  it('a quote, a createDelivery and a cancel naming the other namespace\'s account are refused with UNAUTHORIZED AccountNotAllowed, nothing started', async () => {
    const quoted = await refused(stack, ordersA, { reference: newReference('NXB-OTHER'), account: 'shop-b', order: order() }, notServed('quote', 'shop-b', endpointA));
    await refused(stack, ordersB, { reference: newReference('NXB-OTHER'), account: 'shop-a', order: order(), quoteFirst: false }, notServed('createDelivery', 'shop-a', endpointB));
    // Nor can it read, change or cancel another account's delivery: refused before the workflow is looked up.
    const { reference } = await quotedCreatedCancelled(stack, ordersA, 'shop-a');
    const cancel = await failureOf(request(ordersB, { operation: 'cancel', input: { reference, account: 'shop-a' } }));
    expect(cancel.handler?.type).toBe('UNAUTHORIZED');
    expect(cancel.application?.type).toBe('AccountNotAllowed');
    // An unknown account reads exactly like another endpoint's: the answer does not tell which accounts exist.
    const unknown = await refused(stack, ordersA, { reference: newReference('NXB-NOBODY'), account: 'nobody', order: order() }, notServed('quote', 'nobody', endpointA));
    expect(unknown.message).toBe(quoted.message.replace('shop-b', 'nobody'));
  });
});
