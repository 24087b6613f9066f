/**
 * One account's trouble stays its own, everything real: the registry file, the dev server, the
 * workers with one API client per account, and two simulators, one per account's base URL (shop-b's
 * courier host is the one in trouble).
 *
 * - a key revoked while deliveries are open: the calls made outside the pacing gate (an update, a
 *   cancel) wait (one refused probe per period, the workflows running, nothing failed) and complete
 *   within seconds of the corrected key; the other account's update goes through meanwhile;
 * - 5xx and 429 answers from one account's base URL: that account waits and catches up, the other
 *   account's orders are created as fast as when all is well.
 */
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DeliveryClient } from '../../client/delivery-client';
import { deliveryWorkflowId } from '../../contract/workflow-ids';
import { keyFingerprint } from '../../simulator/auth';
import { createSimulator, type Simulator } from '../../simulator/server';
import { deliveryRequest } from '../fixtures/orders';
import { eventually } from '../helpers/stack';
import { startAccountStack, type AccountStack } from '../helpers/account-stack';

jest.setTimeout(120_000);

const KEY = { 'shop-a': 'trouble-key-a', 'shop-b': 'trouble-key-b' } as const;
type Shop = keyof typeof KEY;
/** shop-b's courier host counts 1 creation per 4 s, while the registry gives shop-b the contract's 20 a minute: its gate meets 429s. */
const B_HOST_CREATIONS = { limit: 1, windowMs: 4_000 };

const sims = {} as Record<Shop, Simulator>;
let dir: string;
let stack: AccountStack;

beforeAll(async () => {
  sims['shop-a'] = createSimulator({ apiKeys: [KEY['shop-a']], onError: (m) => console.error(`simulator a: ${m}`) });
  sims['shop-b'] = createSimulator({ apiKeys: [KEY['shop-b']], rateLimits: { creations: B_HOST_CREATIONS }, onError: (m) => console.error(`simulator b: ${m}`) });
  dir = mkdtempSync(join(tmpdir(), 'account-trouble-'));
  const accounts = [];
  for (const id of ['shop-a', 'shop-b'] as const) {
    writeFileSync(join(dir, `${id}.key`), KEY[id]);
    accounts.push({ id, baseUrl: (await sims[id].listen(0, '127.0.0.1')).url, apiKey: { file: `${id}.key` } });
  }
  writeFileSync(join(dir, 'accounts.json'), JSON.stringify({ accounts }));
  stack = await startAccountStack(join(dir, 'accounts.json'), 'trouble');
});

afterAll(async () => {
  await stack.stop();
  await Promise.all(Object.values(sims).map((s) => s.close()));
  rmSync(dir, { recursive: true, force: true });
});

/** The key in the account's mounted key file (written aside and renamed, as a secret mount swaps it). */
function setKey(account: Shop, key: string): void {
  writeFileSync(join(dir, `${account}.key.tmp`), key);
  renameSync(join(dir, `${account}.key.tmp`), join(dir, `${account}.key`));
}

async function start(reference: string, account: Shop): Promise<{ reference: string; account: Shop; startedAt: number }> {
  const { reference_number: _r, ...order } = deliveryRequest({ is_food: false });
  const startedAt = Date.now();
  stack.started.push((await stack.deliveries.startDelivery(order, { reference, account })).workflowId);
  return { reference, account, startedAt };
}

/** How long after its start the account's courier had the order's delivery (polled: within 100 ms). */
const createdAfter = async (d: { reference: string; account: Shop; startedAt: number }, timeoutMs = 60_000) => {
  await eventually(`${d.reference} created`, () => sims[d.account].deliveries().some((x) => x.delivery.reference_number === d.reference), timeoutMs);
  return Date.now() - d.startedAt;
};
const isCreated = (d: { reference: string; account: Shop }) => sims[d.account].deliveries().some((x) => x.delivery.reference_number === d.reference);

const following = (d: { reference: string; account: Shop }) =>
  eventually(`${d.reference} following`, async () => {
    const s = await stack.deliveries.getStatus(d);
    return s.phase === 'following' ? s : undefined;
  });

test("a revoked key holds that account's updates and cancels (one probe per period, nothing failed) until the corrected key, within seconds; the other account's update goes through meanwhile", async () => {
  const [a, b1, b2] = [await start('REV-A-1', 'shop-a'), await start('REV-B-1', 'shop-b'), await start('REV-B-2', 'shop-b')];
  const [sa, sb1] = [await following(a), await following(b1), await following(b2)];

  const revoked = 'trouble-key-b-revoked';
  setKey('shop-b', revoked); // the courier refuses what the account's key file now holds
  const refusals = () => sims['shop-b'].requestLog().filter((e) => e.key_fingerprint === keyFingerprint(revoked) && e.status === 401);
  let updatedB: Awaited<ReturnType<DeliveryClient['updateDelivery']>> | undefined;
  const updatingB = stack.deliveries.updateDelivery(b1, { destinations: [{ id: sb1.destinations[0]!.id, package_type: 'XLARGE' }] }).then((s) => (updatedB = s));
  await stack.deliveries.cancelDelivery(b2, { wait: false });
  const first = await eventually('the courier to refuse the revoked key', () => refusals()[0]);

  // shop-a's update goes through while shop-b is paused.
  await stack.deliveries.updateDelivery(a, { destinations: [{ id: sa.destinations[0]!.id, package_type: 'LARGE' }] });
  expect(sims['shop-a'].deliveries().find((x) => x.delivery.reference_number === a.reference)!.delivery.destinations[0]!.package_type).toBe('LARGE');

  // A probe one period later: shop-b's update and cancel wait, their workflows run, nothing failed.
  const second = await eventually('a second probe', () => refusals().find((e) => Date.parse(e.time) >= Date.parse(first.time) + 4_000), 30_000);
  expect(second).toBeDefined();
  expect(updatedB).toBeUndefined();
  for (const d of [b1, b2]) expect((await stack.temporal.workflow.getHandle(deliveryWorkflowId(d.reference, d.account)).describe()).status.name).toBe('RUNNING');
  expect((await stack.deliveries.getStatus(b2)).cancellation).toBeUndefined();

  const correctedAt = Date.now();
  setKey('shop-b', KEY['shop-b']);
  await updatingB;
  expect(sims['shop-b'].deliveries().find((x) => x.delivery.reference_number === b1.reference)!.delivery.destinations[0]!.package_type).toBe('XLARGE');
  const cancelled = await eventually('shop-b cancel done', async () => (await stack.deliveries.getStatus(b2)).cancellation);
  expect(cancelled.outcome).toBe('cancelled');
  expect(Date.now() - correctedAt).toBeLessThan(15_000);
  // No storm: two calls were out when the key was revoked; after that, one refused probe per 5 s period.
  expect(refusals().length).toBeLessThanOrEqual(2 + Math.ceil((correctedAt - Date.parse(first.time)) / 5_000));
});

test("5xx and 429 answers from one account's courier host slow that account only: the other's orders are created within seconds meanwhile", async () => {
  const starts = async (prefix: string, account: Shop, n: number) => Promise.all(Array.from({ length: n }, (_, i) => start(`${prefix}-${i}`, account)));

  // shop-b's host answers every call 503.
  sims['shop-b'].setFaults({ error_rate: 1 });
  const failing = await starts('5XX-B', 'shop-b', 3);
  const meanwhile = await starts('5XX-A', 'shop-a', 3);
  for (const d of meanwhile) expect(await createdAfter(d, 20_000)).toBeLessThan(5_000);
  expect(failing.filter(isCreated)).toEqual([]);
  expect(sims['shop-b'].requestLog().filter((e) => e.status === 503).length).toBeGreaterThan(0);
  for (const d of failing) expect((await stack.temporal.workflow.getHandle(deliveryWorkflowId(d.reference, d.account)).describe()).status.name).toBe('RUNNING');
  sims['shop-b'].setFaults({ error_rate: 0 });
  for (const d of failing) await createdAfter(d);

  // shop-b's host counts fewer creations than the registry says: its gate meets 429s and waits out their Retry-After.
  const tooMany = await starts('429-B', 'shop-b', 4);
  const alongside = await starts('429-A', 'shop-a', 2);
  for (const d of alongside) expect(await createdAfter(d, 20_000)).toBeLessThan(5_000);
  for (const d of tooMany) await createdAfter(d);
  expect(sims['shop-b'].requestLog().filter((e) => e.status === 429).length).toBeGreaterThan(0);
  expect(sims['shop-a'].requestLog().filter((e) => e.status === 429 || e.status >= 500)).toEqual([]);
});
