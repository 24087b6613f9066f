/**
 * Many courier accounts served by one set of workers, everything real: the account registry read
 * from its file, the Temporal dev server, the workers with one API client per account, and the
 * simulator holding one key (and so one data scope and one set of rate windows) per account.
 *
 * - the same reference in two accounts is two deliveries, each created with its account's key;
 *   twice in one account, one;
 * - each account's gate paces its own key: neither key's windows go over the account's limit, and
 *   one account's backlog does not hold back another account's orders;
 * - an unknown account is refused before anything reaches the courier, naming the field;
 * - an account added to the registry file while deliveries run serves at once.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import type { AccountRegistry } from '../../accounts/registry';
import { DeliveryRefusedError, DeliveryRequestRejectedError, type DeliveryClient } from '../../client/delivery-client';
import { gateStatusQuery } from '../../contract/gate-messages';
import { deliveryWorkflowId, gateWorkflowId } from '../../contract/workflow-ids';
import { WORKFLOW_FAILURE_TYPES } from '../../contract/failures';
import { keyFingerprint } from '../../simulator/auth';
import { createSimulator, type Simulator } from '../../simulator/server';
import { deliveryOrder } from '../fixtures/orders';
import { eventually } from '../helpers/stack';
import { registryFolder, startAccountStack, type AccountStack, type RegistryFolder } from '../helpers/account-stack';
import type { RunningWorkers } from '../helpers/workers';

jest.setTimeout(120_000);

const KEYS = { 'shop-a': 'key-shop-a', 'shop-b': 'key-shop-b', 'shop-c': 'key-shop-c' } as const;
type Shop = keyof typeof KEYS;
/** Each account's creations: 2 per 4 s, far under the simulator's own 20 a minute, so a slip shows as a 429 or a crowded window. */
const CREATION_LIMIT = 2;
const CREATION_WINDOW_MS = 4_000;

let sim: Simulator;
let dir: string;
let stack: AccountStack;
let registry: AccountRegistry;
let workers: RunningWorkers;
let temporal: Client;
let deliveries: DeliveryClient;

let folder: RegistryFolder;
const writeRegistry = (shops: Shop[]) => folder.write(shops);

beforeAll(async () => {
  // The simulator's limits are per key, as the courier's: 20 creations a minute each.
  sim = createSimulator({ apiKeys: Object.values(KEYS), onError: (m) => console.error(`simulator: ${m}`) });
  await sim.listen(0, '127.0.0.1');
  folder = registryFolder('delivery-accounts-', KEYS, () => ({ baseUrl: sim.url, limits: `creations=${CREATION_LIMIT}/${CREATION_WINDOW_MS / 1000}s` }));
  dir = folder.dir;
  writeRegistry(['shop-a', 'shop-b']);
  stack = await startAccountStack(folder.file, 'accounts');
  ({ registry, workers, temporal, deliveries } = stack);
});

afterAll(async () => {
  await stack.stop();
  await sim.close();
});

const order = () => deliveryOrder({ is_food: false });

async function start(reference: string, account: Shop) {
  const s = await deliveries.startDelivery(order(), { reference, account });
  stack.started.push(s.workflowId);
  return s;
}

/** The simulator's record of this reference under each key that has one, by account. */
function createdUnder(reference: string): Partial<Record<Shop, string>> {
  const byFingerprint = new Map(Object.entries(KEYS).map(([shop, key]) => [keyFingerprint(key), shop as Shop]));
  const out: Partial<Record<Shop, string>> = {};
  for (const d of sim.deliveries()) if (d.delivery.reference_number === reference) out[byFingerprint.get(d.key_fingerprint)!] = d.delivery.id;
  return out;
}

/** Times of the successful creations made with this key. */
function creationTimes(key: string): number[] {
  return sim
    .requestLog()
    .filter((e) => e.method === 'POST' && e.path === '/v1/deliveries' && e.key_fingerprint === keyFingerprint(key) && e.status < 300)
    .map((e) => Date.parse(e.time))
    .sort((a, b) => a - b);
}

test('the same reference in two accounts is two deliveries, each with its own key; twice in one account, one', async () => {
  const a = await start('SAME-1', 'shop-a');
  const b = await start('SAME-1', 'shop-b');
  expect(a).toMatchObject({ workflowId: 'delivery@shop-a:SAME-1', alreadyStarted: false });
  expect(b).toMatchObject({ workflowId: 'delivery@shop-b:SAME-1', alreadyStarted: false });
  const again = await deliveries.startDelivery(order(), { reference: 'SAME-1', account: 'shop-a' });
  expect(again).toMatchObject({ workflowId: 'delivery@shop-a:SAME-1', alreadyStarted: true });

  const both = await eventually('both deliveries created', () => {
    const made = createdUnder('SAME-1');
    return made['shop-a'] && made['shop-b'] ? made : undefined;
  });
  expect(both['shop-a']).not.toEqual(both['shop-b']);
  // Each workflow follows the delivery its own key created, and the operator finds it by account.
  await eventually('shop-a following', async () => ((await deliveries.getStatus({ reference: 'SAME-1', account: 'shop-a' })).deliveryId === both['shop-a'] ? true : undefined));
  await eventually('shop-b following', async () => ((await deliveries.getStatus({ reference: 'SAME-1', account: 'shop-b' })).deliveryId === both['shop-b'] ? true : undefined));
  // A delivery workflow with an ID of no account's form and no DeliveryAccount (a start the workflow
  // refuses; here, on a queue nobody polls) is no account's: listed first as a plain workflow, so the
  // account's listing below must leave it out (it once listed it, as `default`).
  const stray = await temporal.workflow.start('delivery', { taskQueue: `unpolled-${Date.now()}`, workflowId: `stray-SAME-1-${Date.now()}`, args: [{}] });
  try {
    await eventually('the stray workflow indexed', async () => ((await temporal.workflow.count(`WorkflowId = '${stray.workflowId}'`)).count === 1 ? true : undefined));
    const listed = await eventually('shop-b listed', async () => {
      const rows = await deliveries.list({ account: 'shop-b' });
      return rows.some((r) => r.reference === 'SAME-1') ? rows : undefined;
    });
    expect(listed.map((r) => r.workflowId)).not.toContain(stray.workflowId);
    expect(listed.every((r) => r.account === 'shop-b')).toBe(true);
  } finally {
    await stray.terminate('test over');
  }
});

test("each account's gate paces its own key, and one account's backlog does not hold back another's orders", async () => {
  const aRefs = Array.from({ length: 3 * CREATION_LIMIT }, (_, i) => `BACKLOG-A-${i}`);
  const bRefs = ['FIRST-B-0', 'FIRST-B-1'];
  // The earlier test's creations hold slots for a window: both accounts start with every slot free.
  const lastEarlier = Math.max(0, ...creationTimes(KEYS['shop-a']), ...creationTimes(KEYS['shop-b']));
  await eventually('the earlier creations\' windows to pass', () => (Date.now() > lastEarlier + CREATION_WINDOW_MS + 500 ? true : undefined));
  const before = { a: creationTimes(KEYS['shop-a']).length, b: creationTimes(KEYS['shop-b']).length };
  // shop-a's backlog first, shop-b's two orders right behind it.
  for (const r of aRefs) await start(r, 'shop-a');
  for (const r of bRefs) await start(r, 'shop-b');

  await eventually('every order created', () => (aRefs.concat(bRefs).every((r) => Object.keys(createdUnder(r)).length === 1) ? true : undefined), 60_000);
  expect(aRefs.every((r) => createdUnder(r)['shop-a'])).toBe(true);
  expect(bRefs.every((r) => createdUnder(r)['shop-b'])).toBe(true);

  // The courier never had to refuse a call, and no window of either key held more than its limit.
  expect(sim.requestLog().filter((e) => e.status === 429)).toEqual([]);
  for (const key of [KEYS['shop-a'], KEYS['shop-b']]) {
    const times = creationTimes(key);
    for (let i = CREATION_LIMIT; i < times.length; i++) expect(times[i]! - times[i - CREATION_LIMIT]!).toBeGreaterThanOrEqual(CREATION_WINDOW_MS);
  }
  // shop-a needs three windows for its six; shop-b's two went out in shop-a's first window.
  const a = creationTimes(KEYS['shop-a']).slice(before.a);
  const b = creationTimes(KEYS['shop-b']).slice(before.b);
  expect(b.at(-1)!).toBeLessThan(a[CREATION_LIMIT]!);

  // One gate per account, each with its account's limits.
  for (const shop of ['shop-a', 'shop-b'] as const) {
    const status = await temporal.workflow.getHandle(gateWorkflowId(workers.taskQueue, shop)).query(gateStatusQuery);
    expect(status.config.limits.creations).toEqual({ limit: CREATION_LIMIT, windowMs: CREATION_WINDOW_MS });
  }
});

test('an unknown account is refused before anything reaches the courier; added to the registry file, it serves at once', async () => {
  // Refused within the start call (test/temporal/start-refusals.test.ts has the rest); its workflow has ended.
  const refused = await start('LATE-C-1', 'shop-c').catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(DeliveryRefusedError);
  expect((refused as Error).message).toMatch(/account: no courier account shop-c/);
  const err = await deliveries.result({ reference: 'LATE-C-1', account: 'shop-c' }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(DeliveryRequestRejectedError);
  expect((err as DeliveryRequestRejectedError).type).toBe(WORKFLOW_FAILURE_TYPES.invalidInput);
  expect(sim.requestLog().filter((e) => e.key_fingerprint === keyFingerprint(KEYS['shop-c']))).toEqual([]);

  // While shop-a's and shop-b's deliveries run, the operator adds shop-c to the file.
  writeRegistry(['shop-a', 'shop-b', 'shop-c']);
  await eventually('the registry to have shop-c', () => registry.get('shop-c'));
  await start('LATE-C-2', 'shop-c');
  const made = await eventually('the shop-c delivery created', () => createdUnder('LATE-C-2')['shop-c']);
  expect((await deliveries.getStatus({ reference: 'LATE-C-2', account: 'shop-c' })).phase).not.toBe('ended');
  expect(made).toBeDefined();
  // The deliveries already running went on meanwhile.
  expect((await deliveries.getStatus({ reference: 'SAME-1', account: 'shop-a' })).phase).toBe('following');
});

test("a revoked key pauses that account's calls (its deliveries wait, one probe per period) and they go on within seconds of the corrected key; other accounts go on meanwhile", async () => {
  const revoked = 'key-shop-b-revoked';
  writeFileSync(join(dir, 'shop-b.key'), revoked); // the key in the mounted secret is now one the courier refuses
  const refusals = () => sim.requestLog().filter((e) => e.key_fingerprint === keyFingerprint(revoked) && e.status === 401);
  await start('REVOKED-B-1', 'shop-b');
  await start('REVOKED-B-2', 'shop-b');
  const firstRefusal = await eventually('the courier to refuse the revoked key', () => refusals()[0]);
  await start('MEANWHILE-A-1', 'shop-a');
  await eventually('shop-a served meanwhile', () => createdUnder('MEANWHILE-A-1')['shop-a'], 30_000);
  // A probe one period later: shop-b's deliveries are waiting, not failed. Before it, only the calls of
  // its two orders that were already out together when the first refusal came (no retry storm).
  const period = (e: { time: string }) => Date.parse(e.time) - Date.parse(firstRefusal.time) >= 4_000;
  await eventually('a probe one period after the first refusal', () => refusals().find(period), 30_000);
  expect(refusals().filter((e) => !period(e)).length).toBeLessThanOrEqual(2);
  for (const reference of ['REVOKED-B-1', 'REVOKED-B-2']) {
    expect((await temporal.workflow.getHandle(deliveryWorkflowId(reference, 'shop-b')).describe()).status.name).toBe('RUNNING');
    expect(createdUnder(reference)['shop-b']).toBeUndefined();
  }

  const correctedAt = Date.now();
  writeFileSync(join(dir, 'shop-b.key'), KEYS['shop-b']);
  await eventually('both shop-b deliveries created after the correction', () => (['REVOKED-B-1', 'REVOKED-B-2'].every((r) => createdUnder(r)['shop-b']) ? true : undefined), 30_000);
  expect(Date.now() - correctedAt).toBeLessThan(15_000);
  // No storm: one refused call per probe period at most (plus the first).
  const pausedMs = correctedAt - Date.parse(firstRefusal.time);
  expect(refusals().length).toBeLessThanOrEqual(2 + Math.ceil(pausedMs / 5_000));
});
