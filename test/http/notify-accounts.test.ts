/**
 * Notification endpoints per courier account, over real HTTP: a registry file where two accounts
 * each have an endpoint named `orders` (different URLs and secrets) and one has `audit`. The
 * activities run in Temporal's activity context with a delivery workflow's ID, which names the
 * account (the start check reads the start's `account`): each account's `orders` goes to its own
 * receiver signed with its own secret, an order of A naming B's `audit` is refused at its start
 * check and at send time, and a rotated secret
 * signs from the next attempt.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { DefaultLogger } from '@temporalio/worker';
import { MockActivityEnvironment } from '@temporalio/testing';
import { Webhook } from 'standardwebhooks';
import { accountRegistryFromEnv, type AccountRegistry } from '../../accounts/registry';
import { createNotifyActivities } from '../../activities/notify-activities';
import { createStartCheckActivities } from '../../activities/start-checks';
import type { DeliveryState, TimelineEntry } from '../../contract/delivery-types';
import { NOTIFY_FAILURE_TYPES } from '../../contract/failures';
import { deliveryWorkflowId } from '../../contract/workflow-ids';
import { DEFAULT_RETRY_SCHEDULE } from '../../notifications/retry-schedule';
import { NotificationSender } from '../../notifications/sender';
import { registryTargets } from '../../notifications/targets';
import { generateWebhookSecret } from '../../provider/webhook-signature';
import { NotificationOutbox } from '../../workflows/notification-outbox';
import { deliveryRequest } from '../fixtures/orders';
import { startReceiver, type Receiver } from './simulator-fixtures';

const secretA = generateWebhookSecret();
const secretB = generateWebhookSecret();
const secretAudit = generateWebhookSecret();
let dir: string;
let rxA: Receiver;
let rxB: Receiver;
let rxAudit: Receiver;
let registry: AccountRegistry;
const sender = new NotificationSender(5_000);

const file = (name: string, text: string) => writeFileSync(join(dir, name), `${text}\n`);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'notify-accounts-'));
  [rxA, rxB, rxAudit] = await Promise.all([startReceiver(), startReceiver(), startReceiver()]);
  file('a.key', 'key-a');
  file('b.key', 'key-b');
  file('a-orders.secrets', secretA);
  file('b-orders.secrets', secretB);
  file('b-audit.secrets', secretAudit);
  const account = (id: string, notify: Record<string, { url: string; secrets: { file: string } }>) => ({ id, baseUrl: 'http://127.0.0.1:4010', apiKey: { file: `${id.slice(-1)}.key` }, notify });
  file(
    'accounts.json',
    JSON.stringify({
      accounts: [
        account('shop-a', { orders: { url: rxA.url, secrets: { file: 'a-orders.secrets' } } }),
        account('shop-b', { orders: { url: rxB.url, secrets: { file: 'b-orders.secrets' } }, audit: { url: rxAudit.url, secrets: { file: 'b-audit.secrets' } } }),
      ],
    }),
  );
  registry = accountRegistryFromEnv({ DELIVERY_ACCOUNTS_FILE: join(dir, 'accounts.json') }, { watch: false });
});
afterAll(async () => {
  registry.close();
  await sender.close();
  await Promise.all([rxA, rxB, rxAudit].map((r) => r.close()));
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  for (const r of [rxA, rxB, rxAudit]) r.received.length = 0;
});

const state = (reference: string): DeliveryState => ({ reference, phase: 'following', deliveryId: 'dlv_1', status: 'ASSIGNED', destinations: [], isFood: false, timeline: [] });
const entry = (): TimelineEntry => ({ at: new Date().toISOString(), subject: 'delivery', status: 'ASSIGNED', source: 'provider' });

/** Runs `fn` as an activity of the delivery workflow of (reference, account). */
function inDelivery<R>(account: string, fn: () => Promise<R>, attempt = 1): Promise<R> {
  const env = new MockActivityEnvironment({ attempt, workflowExecution: { workflowId: deliveryWorkflowId('N-1', account), runId: 'run-1' } }, { logger: new DefaultLogger('ERROR') });
  return env.run(fn);
}

function notification(account: string) {
  const box = new NotificationOutbox(deliveryWorkflowId('N-1', account), ['endpoint:orders']);
  return box.add('delivery.status_changed', { subject: 'delivery', status: 'ASSIGNED', previousStatus: 'CREATED', source: 'provider' }, state('N-1'), entry())!;
}

const activities = () => createNotifyActivities({ endpoints: new Map(), retryScheduleMs: DEFAULT_RETRY_SCHEDULE }, sender, undefined, registryTargets(registry));

test("`orders` of account A and `orders` of account B are two endpoints, each signed with its own secret", async () => {
  const notify = activities();
  for (const account of ['shop-a', 'shop-b']) {
    const n = notification(account);
    await inDelivery(account, () => notify.notifyEndpoint({ endpoint: 'orders', notification: n }));
  }
  expect(rxA.received).toHaveLength(1);
  expect(rxB.received).toHaveLength(1);
  const [a] = rxA.received;
  const [b] = rxB.received;
  expect(() => new Webhook(secretA).verify(a!.body, a!.headers)).not.toThrow();
  expect(() => new Webhook(secretB).verify(b!.body, b!.headers)).not.toThrow();
  expect(() => new Webhook(secretB).verify(a!.body, a!.headers)).toThrow();
});

test("an order of A naming B's endpoint is refused at its start check and, if it got that far, at send time; nothing is sent", async () => {
  const checks = createStartCheckActivities(registryTargets(registry));
  const { reference_number: _r, ...order } = deliveryRequest({}, 1);
  const input = (account: string, endpoint: string) => ({ reference: 'N-1', account, order, notify: { endpoint } });
  const check = (account: string, endpoint: string) => inDelivery(account, () => checks.checkDeliveryInput(input(account, endpoint)));
  expect(await check('shop-b', 'audit')).toEqual([]);
  expect(await check('shop-a', 'orders')).toEqual([]);
  expect(await check('shop-a', 'audit')).toEqual([{ field: 'notify.endpoint', message: expect.stringContaining('no notification endpoint named audit (configured: orders; account shop-a') }]);
  // The `default` account is not in this registry: it has no endpoint at all.
  expect((await check('default', 'orders')).map((i) => i.field)).toContain('notify.endpoint');

  const err = await inDelivery('shop-a', () => activities().notifyEndpoint({ endpoint: 'audit', notification: notification('shop-a') })).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ApplicationFailure);
  expect(err).toMatchObject({ type: NOTIFY_FAILURE_TYPES.endpointUnknown, nonRetryable: true, message: expect.stringContaining('for account shop-a') });
  expect(rxAudit.received).toHaveLength(0);
});

test('a rotated endpoint secret signs from the next attempt, without a restart', async () => {
  const notify = activities();
  const next = generateWebhookSecret();
  file('a-orders.secrets', next);
  try {
    await inDelivery('shop-a', () => notify.notifyEndpoint({ endpoint: 'orders', notification: notification('shop-a') }));
    const [a] = rxA.received;
    expect(() => new Webhook(next).verify(a!.body, a!.headers)).not.toThrow();
    expect(() => new Webhook(secretA).verify(a!.body, a!.headers)).toThrow();
  } finally {
    file('a-orders.secrets', secretA);
  }
});
