/**
 * Reads, updates and cancels are paced per account, everything real: the registry file, the dev
 * server's per-fairness-key rate limit (worker/account-rates.ts), the workers with one API client
 * per account, and two simulators, each counting its account's `other` limit.
 *
 * shop-a's deliveries read the courier far beyond shop-a's `other` limit (every delivery
 * reconciles every second); shop-b reads well under its own. Each courier's request log holds
 * every call that reached it: no rolling window of a key over its limit, no 429, and shop-b's
 * reads keep their own pace beside shop-a's backlog.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeliveryClient } from '../../client/delivery-client';
import type { RateLimit } from '../../provider/limits';
import { createSimulator, type Simulator } from '../../simulator/server';
import { deliveryRequest } from '../fixtures/orders';
import { eventually } from '../helpers/stack';
import { busiestWindow } from '../helpers/rolling-windows';
import { startAccountStack, type AccountStack } from '../helpers/account-stack';

jest.setTimeout(180_000);

type Shop = 'shop-a' | 'shop-b';
const OTHER: Record<Shop, RateLimit> = { 'shop-a': { limit: 5, windowMs: 5_000 }, 'shop-b': { limit: 20, windowMs: 5_000 } };
/** Deliveries per account, each reading once a second: shop-a wants about 10 reads a second (its limit: 1), shop-b about 2 (its limit: 4). */
const DELIVERIES: Record<Shop, number> = { 'shop-a': 10, 'shop-b': 2 };
const QUIET_MS = 1_000;
const OBSERVE_MS = 30_000;
/** Quotes and creations no test waits on, at the courier and in the registry. */
const FAST = { creations: { limit: 1_000, windowMs: 1_000 }, quotes: { limit: 1_000, windowMs: 1_000 } };

const sims = {} as Record<Shop, Simulator>;
let dir: string;
let stack: AccountStack;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'account-pacing-'));
  const accounts = [];
  for (const id of ['shop-a', 'shop-b'] as const) {
    sims[id] = createSimulator({ apiKeys: [`pacing-key-${id}`], rateLimits: { ...FAST, other: OTHER[id] }, onError: (m) => console.error(`simulator ${id}: ${m}`) });
    writeFileSync(join(dir, `${id}.key`), `pacing-key-${id}`);
    const limits = `creations=1000/1s,quotes=1000/1s,other=${OTHER[id].limit}/${OTHER[id].windowMs}ms`;
    accounts.push({ id, baseUrl: (await sims[id].listen(0, '127.0.0.1')).url, apiKey: { file: `${id}.key` }, limits });
  }
  writeFileSync(join(dir, 'accounts.json'), JSON.stringify({ accounts }));
  stack = await startAccountStack(join(dir, 'accounts.json'), 'pacing');
});

afterAll(async () => {
  await stack?.stop();
  await Promise.all(Object.values(sims).map((s) => s.close()));
  rmSync(dir, { recursive: true, force: true });
});

/** The courier's `other` calls (everything but a quote and a creation), with their arrival times. */
const otherCalls = (shop: Shop) => sims[shop].requestLog().filter((e) => !(e.method === 'POST' && (e.path === '/v1/quotes' || e.path === '/v1/deliveries')));

test("one account's burst of reads runs at its own `other` limit, the other account's reads at their own pace, every key within its limit at the courier", async () => {
  const deliveries = new DeliveryClient({ temporal: stack.temporal, taskQueue: stack.workers.taskQueue, followUp: { quietMs: QUIET_MS, endGraceMs: 0 } });
  for (const shop of ['shop-a', 'shop-b'] as const) {
    for (let i = 0; i < DELIVERIES[shop]; i++) {
      const { reference_number: _r, ...order } = deliveryRequest({ is_food: false });
      stack.started.push((await deliveries.startDelivery(order, { reference: `PACE-${shop}-${i}`, account: shop })).workflowId);
    }
  }
  await eventually('every delivery created', () => (['shop-a', 'shop-b'] as const).every((s) => sims[s].deliveries().length === DELIVERIES[s]) || undefined);

  expect(stack.workers.workers.pacingSummary).toMatch(/^reads, updates and cancels paced per account by the Temporal server/);
  const from = Date.now();
  await new Promise((resolve) => setTimeout(resolve, OBSERVE_MS));
  const to = Date.now();

  for (const shop of ['shop-a', 'shop-b'] as const) {
    const calls = otherCalls(shop);
    // Within the key's limit in every window, from the first call on, and never refused.
    expect(busiestWindow(calls.map((e) => Date.parse(e.time)), OTHER[shop].windowMs)).toBeLessThanOrEqual(OTHER[shop].limit);
    expect(calls.filter((e) => e.status === 429)).toEqual([]);
  }

  // shop-a's backlog is served near its own limit, not starved: at least half its windows' worth
  // (the server's burst and the dispatch spread leave 2.25 s of each 5 s window unused: 69 %).
  const aReads = otherCalls('shop-a').filter((e) => Date.parse(e.time) >= from && Date.parse(e.time) < to).length;
  expect(aReads).toBeGreaterThanOrEqual(Math.floor((0.5 * OTHER['shop-a'].limit * OBSERVE_MS) / OTHER['shop-a'].windowMs));

  // shop-b's deliveries read about once a second each, as with nobody else on the queue: no gap
  // between two reads of one delivery much over its quiet time (each of shop-a's waits about 14 s).
  const bReads = new Map<string, number[]>();
  for (const e of otherCalls('shop-b')) if (Date.parse(e.time) >= from && Date.parse(e.time) < to) bReads.set(e.path, [...(bReads.get(e.path) ?? []), Date.parse(e.time)]);
  expect(bReads.size).toBe(DELIVERIES['shop-b']);
  for (const times of bReads.values()) {
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    expect(times.length).toBeGreaterThanOrEqual(Math.floor((0.8 * OBSERVE_MS) / (QUIET_MS + 500)));
    expect(Math.max(...gaps)).toBeLessThan(QUIET_MS + 2_000);
  }
});
