import { notificationEventId, NotificationOutbox } from '../../workflows/notification-outbox';
import { notifyTargets } from '../../workflows/notifier';
import { retryDelayMs, parseSchedule, DEFAULT_RETRY_SCHEDULE } from '../../notifications/retry-schedule';
import { notifyConfigFromEnv, describeEndpoints } from '../../notifications/config';
import { notificationBody } from '../../notifications/sender';
import { parseNotification, verifyNotification, NotificationVerificationError } from '../../client/notifications';
import { InvalidInputError } from '../../client/delivery-client';
import { generateWebhookSecret, signWebhookWithAll } from '../../provider/webhook-signature';
import type { DeliveryState, TimelineEntry } from '../../contract/delivery-types';
import { Webhook } from 'standardwebhooks';

const state = (): DeliveryState => ({ reference: 'A-1', phase: 'following', deliveryId: 'dlv_1', status: 'CREATED', destinations: [], isFood: false, timeline: [] });
const entry = (): TimelineEntry => ({ at: '2026-11-26T10:00:00.000Z', subject: 'delivery', status: 'CREATED', source: 'provider' });

describe('the notification outbox', () => {
  it('numbers notifications 1, 2, 3 with stable, header-safe event ids and a copy of the state without the timeline', () => {
    const box = new NotificationOutbox('delivery:注文-1001\n', ['workflow:o', 'endpoint:e']);
    const s = state();
    s.timeline.push(entry());
    const n1 = box.add('delivery.status_changed', { subject: 'delivery', status: 'CREATED' }, s, entry())!;
    s.status = 'ASSIGNED';
    const n2 = box.add('delivery.status_changed', { subject: 'delivery', status: 'ASSIGNED' }, s, entry())!;
    expect([n1.sequence, n2.sequence]).toEqual([1, 2]);
    expect(n1.eventId).toMatch(/^dn_[0-9a-f]{32}_1$/);
    expect(n1.eventId).toBe(notificationEventId('delivery:注文-1001\n', 1));
    expect(notificationEventId('delivery:B', 1)).not.toBe(n1.eventId);
    expect(n1.state.status).toBe('CREATED'); // not moved by the later change
    expect('timeline' in n1.state).toBe(false);
  });

  it('gives each target the next one in order, records each fate on its timeline entry, and drops what all have had', () => {
    const box = new NotificationOutbox('delivery:A', ['workflow:o', 'endpoint:e']);
    const entries = [entry(), entry()];
    entries.forEach((e) => box.add('delivery.status_changed', { subject: 'delivery' }, state(), e));
    expect(box.next('workflow:o')?.sequence).toBe(1);
    box.sent('workflow:o', 1);
    expect(box.next('workflow:o')?.sequence).toBe(2);
    expect(box.next('endpoint:e')?.sequence).toBe(1);
    expect(entries[0]!.notification!.to).toEqual({ 'workflow:o': 'sent', 'endpoint:e': 'pending' });
    box.sent('workflow:o', 2);
    box.sent('endpoint:e', 1);
    expect(box.snapshot().unsent.map((n) => n.sequence)).toEqual([2]);
    expect(box.idle).toBe(false);
    box.sent('endpoint:e', 2);
    expect(box.idle).toBe(true);
    expect(box.snapshot().unsent).toEqual([]);
  });

  it('gives a stopped target nothing more, marks what it did not have with the stop, and keeps telling the others', () => {
    const box = new NotificationOutbox('delivery:A', ['workflow:o', 'endpoint:e']);
    const entries = [entry(), entry(), entry()];
    entries.forEach((e) => box.add('delivery.status_changed', { subject: 'delivery' }, state(), e));
    box.sent('endpoint:e', 1);
    box.stop('endpoint:e', 'gone');
    expect(box.next('endpoint:e')).toBeUndefined();
    expect(entries.map((e) => e.notification!.to['endpoint:e'])).toEqual(['sent', 'gone', 'gone']);
    const later = entry();
    box.add('delivery.ended', { subject: 'delivery' }, state(), later);
    expect(later.notification!.to).toEqual({ 'workflow:o': 'pending' });
  });

  it('makes nothing when nobody listens', () => {
    const box = new NotificationOutbox('delivery:A', []);
    const e = entry();
    expect(box.add('delivery.status_changed', { subject: 'delivery' }, state(), e)).toBeUndefined();
    expect(e.notification).toBeUndefined();
  });

  it('carries the sequence, the unsent and each target over a continue-as-new', () => {
    const box = new NotificationOutbox('delivery:A', ['endpoint:e']);
    const timeline = [entry(), entry()];
    timeline.forEach((e) => box.add('delivery.status_changed', { subject: 'delivery' }, state(), e));
    box.sent('endpoint:e', 1);
    const carried = JSON.parse(JSON.stringify({ snapshot: box.snapshot(), timeline })) as { snapshot: ReturnType<NotificationOutbox['snapshot']>; timeline: TimelineEntry[] };
    const next = new NotificationOutbox('delivery:A', ['endpoint:e'], carried.snapshot, carried.timeline);
    expect(next.next('endpoint:e')?.sequence).toBe(2);
    next.sent('endpoint:e', 2);
    expect(carried.timeline[1]!.notification!.to['endpoint:e']).toBe('sent');
    const e = entry();
    expect(next.add('delivery.ended', { subject: 'delivery' }, state(), e)?.sequence).toBe(3);
  });
});

describe('notification targets', () => {
  it('signal the named workflow, else a child workflow\'s parent unless told not to, and post to the named endpoint', () => {
    expect(notifyTargets(undefined, undefined)).toEqual([]);
    expect(notifyTargets(undefined, 'order:1')).toEqual([{ key: 'workflow:order:1', kind: 'workflow', workflowId: 'order:1', signal: 'deliveryChanged' }]);
    expect(notifyTargets({ parent: false }, 'order:1')).toEqual([]);
    expect(notifyTargets({ workflowId: 'o2', signal: 'changed', endpoint: 'orders' }, 'order:1').map((t) => t.key)).toEqual(['workflow:o2', 'endpoint:orders']);
  });
});

describe('the retry schedule', () => {
  it('follows Standard Webhooks: 5 s, 5 min, 30 min, 2 h, 5 h, then 10 h each', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 12].map((a) => retryDelayMs(DEFAULT_RETRY_SCHEDULE, a) / 1000)).toEqual([5, 300, 1800, 7200, 18000, 36000, 36000, 36000]);
  });
  it('honours a Retry-After up to its longest delay', () => {
    expect(retryDelayMs(DEFAULT_RETRY_SCHEDULE, 1, 90_000)).toBe(90_000);
    expect(retryDelayMs(DEFAULT_RETRY_SCHEDULE, 1, 7 * 24 * 3_600_000)).toBe(10 * 3_600_000);
  });
  it('is read from text, naming the bad entry', () => {
    expect(parseSchedule('200ms, 1s,5m,2h', 'X')).toEqual([200, 1_000, 300_000, 7_200_000]);
    expect(() => parseSchedule('5s,soon', 'DELIVERY_NOTIFY_RETRY_SCHEDULE')).toThrow(/DELIVERY_NOTIFY_RETRY_SCHEDULE: "soon" must be a number and a unit/);
  });
});

describe('the endpoints configuration', () => {
  const a = generateWebhookSecret();
  const b = generateWebhookSecret();
  it('reads named endpoints, each with its secrets (a name twice: rotation)', () => {
    const c = notifyConfigFromEnv({ DELIVERY_NOTIFY_ENDPOINTS: 'orders=https://orders.example/hooks/delivery?x=1, local=http://127.0.0.1:9000/h', DELIVERY_NOTIFY_SECRETS: `orders=${a},orders=${b} local=${a}` });
    expect(c.endpoints.get('orders')).toMatchObject({ secrets: [a, b] });
    expect(c.endpoints.get('orders')!.url.href).toBe('https://orders.example/hooks/delivery?x=1');
    expect(describeEndpoints(c)).toBe('orders (https://orders.example, 2 secrets), local (http://127.0.0.1:9000, 1 secret)');
    expect(notifyConfigFromEnv({}).endpoints.size).toBe(0);
  });
  it.each([
    [{ DELIVERY_NOTIFY_ENDPOINTS: 'orders=http://orders.example/h', DELIVERY_NOTIFY_SECRETS: `orders=${a}` }, /endpoint orders: must be https:\/\/ \(http:\/\/ only to loopback\)/],
    [{ DELIVERY_NOTIFY_ENDPOINTS: 'orders=https://orders.example/h' }, /endpoint orders has no signing secret/],
    [{ DELIVERY_NOTIFY_ENDPOINTS: 'orders=https://orders.example/h', DELIVERY_NOTIFY_SECRETS: `billing=${a}` }, /a secret for billing, which DELIVERY_NOTIFY_ENDPOINTS does not name/],
    [{ DELIVERY_NOTIFY_ENDPOINTS: 'orders=https://orders.example/h', DELIVERY_NOTIFY_SECRETS: 'orders=whsec_c2hvcnQ=' }, /endpoint orders: a webhook secret must hold 24 to 64 bytes/],
    [{ DELIVERY_NOTIFY_ENDPOINTS: 'https://orders.example/h' }, /DELIVERY_NOTIFY_ENDPOINTS: entry 1 must be name=value/],
    [{ DELIVERY_NOTIFY_ENDPOINTS: 'o=https://u:p@orders.example/h', DELIVERY_NOTIFY_SECRETS: `o=${a}` }, /credentials do not belong in the URL/],
  ])('refuses %j, naming the variable and the endpoint', (env, message) => {
    expect(() => notifyConfigFromEnv(env)).toThrow(message);
  });
  it('never quotes a secret in its errors', () => {
    const weak = 'whsec_c2VjcmV0LXZhbHVlLXRvby1zaG9ydA==';
    try {
      notifyConfigFromEnv({ DELIVERY_NOTIFY_ENDPOINTS: 'o=https://o.example/h', DELIVERY_NOTIFY_SECRETS: `o=${weak}` });
      throw new Error('accepted');
    } catch (err) {
      expect((err as Error).message).not.toContain(weak.slice(6));
    }
  });
});

describe('verifying a notification webhook', () => {
  const secret = generateWebhookSecret();
  const box = new NotificationOutbox('delivery:A-1', ['endpoint:e']);
  const n = box.add('delivery.status_changed', { subject: 'delivery', status: 'CREATED', previousStatus: undefined, source: 'provider' }, state(), entry())!;
  const body = notificationBody(n);
  const now = Date.parse('2026-11-26T10:00:00Z');
  const headers = signWebhookWithAll([generateWebhookSecret(), secret], n.eventId, now / 1000, body);

  it('accepts a request signed with any one of the secrets, as standardwebhooks does, and returns the typed notification', () => {
    expect(verifyNotification({ headers: { ...headers }, body }, [secret], { nowMs: now })).toEqual(n);
  });
  it('is signed so that the independent standardwebhooks package verifies it with either secret', () => {
    const other = generateWebhookSecret();
    const fresh = signWebhookWithAll([other, secret], n.eventId, Math.floor(Date.now() / 1000), body);
    for (const s of [other, secret]) expect(new Webhook(s).verify(body, { ...fresh })).toEqual(JSON.parse(body));
    expect(() => new Webhook(generateWebhookSecret()).verify(body, { ...fresh })).toThrow();
  });
  it('refuses a forged, replayed or altered one', () => {
    expect(() => verifyNotification({ headers: { ...headers }, body }, [generateWebhookSecret()], { nowMs: now })).toThrow(new NotificationVerificationError('no_matching_signature'));
    expect(() => verifyNotification({ headers: { ...headers }, body }, [secret], { nowMs: now + 10 * 60_000 })).toThrow(NotificationVerificationError);
    expect(() => verifyNotification({ headers: { ...headers }, body: body.replace('CREATED', 'CANCELED') }, [secret], { nowMs: now })).toThrow(/no_matching_signature/);
  });
  it('parses a signal\'s argument, naming each bad field', () => {
    expect(parseNotification(JSON.parse(JSON.stringify(n)))).toEqual(n);
    expect(() => parseNotification({ ...n, sequence: 0, type: 'delivery.exploded' })).toThrow(InvalidInputError);
    expect(() => parseNotification({ ...n, sequence: 0 })).toThrow(/sequence/);
  });
});
