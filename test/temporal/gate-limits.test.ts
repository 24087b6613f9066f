/**
 * Limits always current (docs/architecture.md, "Limits always current"), everything real: the
 * registry file, the dev server, the simulator holding the account's key and windows. The usual
 * Kubernetes sequence: the registry's config map changes, then the workers restart (no live
 * reload event reaches the running gate). The account's gate, started with the old limits before
 * the restart and running across it, must pace by the new ones.
 */
import { mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gateStatusQuery } from '../../contract/gate-messages';
import { gateWorkflowId } from '../../contract/workflow-ids';
import { keyFingerprint } from '../../simulator/auth';
import { createSimulator, type Simulator } from '../../simulator/server';
import { deliveryRequest } from '../fixtures/orders';
import { eventually } from '../helpers/stack';
import { startAccountStack, type AccountStack } from '../helpers/account-stack';

jest.setTimeout(240_000);

const KEY = 'key-shop-l';
const WINDOW_MS = 3_000;

let sim: Simulator;
let dir: string;
const stacks: AccountStack[] = [];

function writeRegistry(creationsPerWindow: number): void {
  const accounts = [{ id: 'shop-l', baseUrl: sim.url, apiKey: { file: 'shop-l.key' }, limits: `creations=${creationsPerWindow}/${WINDOW_MS / 1000}s` }];
  // Written aside and renamed, as a config map's update is: never read half-written.
  writeFileSync(join(dir, 'accounts.json.tmp'), JSON.stringify({ accounts }));
  renameSync(join(dir, 'accounts.json.tmp'), join(dir, 'accounts.json'));
}

beforeAll(async () => {
  sim = createSimulator({ apiKeys: [KEY], onError: (m) => console.error(`simulator: ${m}`) });
  await sim.listen(0, '127.0.0.1');
  dir = mkdtempSync(join(tmpdir(), 'delivery-gate-limits-'));
  writeFileSync(join(dir, 'shop-l.key'), KEY);
});

afterAll(async () => {
  for (const s of stacks) await s.stop();
  await sim.close();
});

async function startAll(stack: AccountStack, references: string[]): Promise<void> {
  for (const reference of references) {
    const { reference_number: _r, ...order } = deliveryRequest({ is_food: false });
    stack.started.push((await stack.deliveries.startDelivery(order, { reference, account: 'shop-l' })).workflowId);
  }
}

const created = (references: string[]) => references.every((r) => sim.deliveries().some((d) => d.delivery.reference_number === r));
/** Times of the successful creations, in order. */
const creationTimes = () => sim.requestLog().filter((e) => e.method === 'POST' && e.path === '/v1/deliveries' && e.key_fingerprint === keyFingerprint(KEY) && e.status < 300).map((e) => Date.parse(e.time)).sort((a, b) => a - b);

test('a registry file whose limits changed, then a worker restart with no reload event: the running gate paces by the new limits', async () => {
  writeRegistry(3);
  const before = await startAccountStack(join(dir, 'accounts.json'), 'gate-limits');
  stacks.push(before);
  const gateId = gateWorkflowId(before.workers.taskQueue, 'shop-l');
  let gate = before.temporal.workflow.getHandle(gateId);
  const first = ['LIM-0', 'LIM-1', 'LIM-2'];
  await startAll(before, first);
  await eventually('the first orders created', () => (created(first) ? true : undefined));
  expect((await gate.query(gateStatusQuery)).config.limits.creations).toEqual({ limit: 3, windowMs: WINDOW_MS });

  // The config map changes while the workers are down; they restart on the same queue.
  await before.stop();
  stacks.splice(stacks.indexOf(before), 1);
  writeRegistry(1);
  const after = await startAccountStack(join(dir, 'accounts.json'), 'gate-limits', { taskQueue: before.workers.taskQueue });
  stacks.push(after);
  after.started.push(gateId); // terminated at the end, with the deliveries
  gate = after.temporal.workflow.getHandle(gateId); // the first stack's connection is closed
  expect((await gate.describe()).status.name).toBe('RUNNING'); // the same gate, across the restart

  const next = ['LIM-3', 'LIM-4', 'LIM-5', 'LIM-6'];
  const since = Date.now();
  await startAll(after, next);
  await eventually('the orders after the restart created', () => (created(next) ? true : undefined), 60_000);
  expect((await gate.query(gateStatusQuery)).config.limits.creations).toEqual({ limit: 1, windowMs: WINDOW_MS });
  // One creation a window now (three before): each a whole window after the one before it.
  const times = creationTimes().filter((t) => t >= since);
  expect(times).toHaveLength(next.length);
  for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(WINDOW_MS);
  expect(sim.requestLog().filter((e) => e.status === 429)).toEqual([]);
});
