import type { DeliveryRecord } from '../../provider/schemas';
import type { DeliveryWorkflowInput } from '../../contract/delivery-types';
import { timelineTotal } from '../../contract/delivery-types';
import { DeliveryTracker, SEEN_EVENT_IDS_LIMIT, TIMELINE_LIMIT } from '../../workflows/state';
import { deliveryRequest } from '../fixtures/orders';

const t0 = new Date('2026-01-31T12:00:00Z');

function tracked(): DeliveryTracker {
  const { reference_number: _r, ...order } = deliveryRequest({}, 2);
  const input: DeliveryWorkflowInput = { reference: 'R-1', order };
  const tracker = DeliveryTracker.start(input);
  const record: DeliveryRecord = {
    id: 'del_1',
    status: 'CREATED',
    reference_number: 'R-1',
    is_food: false,
    desired_pickup_time: order.desired_pickup_time,
    pickup_location: order.pickup_location,
    price: { amount: 1000, currency: 'EUR' },
    created_at: t0.toISOString(),
    updated_at: t0.toISOString(),
    destinations: order.destinations.map((d, i) => ({ ...d, id: `dst_${i}`, status: 'PENDING', tracking_url: `https://t.example/dst_${i}`, reference_number: null, updated_at: t0.toISOString() })),
  };
  tracker.applyRecord(record, 'provider', t0);
  return tracker;
}

describe('the delivery state machine', () => {
  it('moves forward and records each change once', () => {
    const t = tracked();
    expect(t.apply({ deliveryId: 'del_1', status: 'ASSIGNED', source: 'webhook' }, t0)).toBe('applied');
    expect(t.apply({ deliveryId: 'del_1', status: 'ASSIGNED', source: 'webhook' }, t0)).toBe('duplicate');
    expect(t.apply({ deliveryId: 'del_1', status: 'CREATED', source: 'webhook' }, t0)).toBe('stale');
    expect(t.state.status).toBe('ASSIGNED');
    expect(t.state.timeline.filter((e) => e.subject === 'delivery').map((e) => e.status)).toEqual(['CREATED', 'ASSIGNED']);
  });

  it('recognises a repeated event id even when the status would move', () => {
    const t = tracked();
    t.apply({ deliveryId: 'del_1', status: 'ASSIGNED', source: 'webhook', eventId: 'evt_1' }, t0);
    expect(t.apply({ deliveryId: 'del_1', status: 'UPCOMING', source: 'webhook', eventId: 'evt_1' }, t0)).toBe('duplicate');
    expect(t.state.status).toBe('ASSIGNED');
  });

  it('remembers a bounded number of event ids', () => {
    const t = tracked();
    for (let i = 0; i < SEEN_EVENT_IDS_LIMIT + 10; i++) t.apply({ deliveryId: 'del_1', destinationId: 'dst_0', status: 'PENDING', source: 'webhook', eventId: `evt_${i}` }, t0);
    expect(t.snapshot().seenEventIds).toHaveLength(SEEN_EVENT_IDS_LIMIT);
    expect(t.snapshot().seenEventIds[0]).toBe('evt_10');
  });

  it('keeps and shows an unknown status without losing its place in the lifecycle', () => {
    const t = tracked();
    t.apply({ deliveryId: 'del_1', status: 'UPCOMING', source: 'webhook' }, t0);
    expect(t.apply({ deliveryId: 'del_1', status: 'WAITING_FOR_FERRY', source: 'webhook' }, t0)).toBe('applied');
    expect(t.state.status).toBe('WAITING_FOR_FERRY');
    expect(t.apply({ deliveryId: 'del_1', status: 'ASSIGNED', source: 'webhook' }, t0)).toBe('late');
    expect(t.state.status).toBe('WAITING_FOR_FERRY');
    expect(t.apply({ deliveryId: 'del_1', status: 'PICKED_UP', source: 'webhook' }, t0)).toBe('applied');
    expect(t.ended).toBe(false);
  });

  it('keeps a webhook overtaken by a later status in the timeline, marked late, without moving the status back', () => {
    const t = tracked();
    t.apply({ deliveryId: 'del_1', status: 'PICKED_UP', source: 'webhook', eventId: 'evt_3' }, t0);
    const at = new Date(t0.getTime() + 5_000);
    expect(t.apply({ deliveryId: 'del_1', status: 'ASSIGNED', source: 'webhook', eventId: 'evt_1', occurredAt: t0.toISOString() }, at)).toBe('late');
    expect(t.state.status).toBe('PICKED_UP');
    expect(t.state.timeline.at(-1)).toEqual({ at: at.toISOString(), subject: 'delivery', status: 'ASSIGNED', source: 'webhook', eventId: 'evt_1', occurredAt: t0.toISOString(), late: true });
    // Kept once: another event with the same status, a record read behind, a rival end: nothing new.
    expect(t.apply({ deliveryId: 'del_1', status: 'ASSIGNED', source: 'webhook', eventId: 'evt_1b' }, at)).toBe('stale');
    expect(t.apply({ deliveryId: 'del_1', status: 'UPCOMING', source: 'reconciliation' }, at)).toBe('stale');
    t.apply({ deliveryId: 'del_1', destinationId: 'dst_0', status: 'DELIVERED', source: 'webhook' }, at);
    expect(t.apply({ deliveryId: 'del_1', destinationId: 'dst_0', status: 'FAILED', source: 'webhook' }, at)).toBe('stale');
    expect(t.apply({ deliveryId: 'del_1', destinationId: 'dst_0', status: 'IN_TRANSIT', source: 'webhook' }, at)).toBe('late');
    expect(t.state.timeline.filter((e) => e.late).map((e) => `${e.subject} ${e.status}`)).toEqual(['delivery ASSIGNED', 'dst_0 IN_TRANSIT']);
  });

  it('knows after the end whether a late webhook could still add to the timeline (the end grace waits only then)', () => {
    const step = (t: DeliveryTracker, status: string, destinationId?: string) => t.apply({ deliveryId: 'del_1', destinationId, status, source: 'webhook' }, t0);
    const t = tracked();
    for (const s of ['ASSIGNED', 'UPCOMING', 'PICKED_UP']) step(t, s);
    step(t, 'IN_TRANSIT', 'dst_0');
    step(t, 'DELIVERED', 'dst_0');
    step(t, 'DELIVERED', 'dst_1'); // its IN_TRANSIT never came: it may still come, late
    step(t, 'DELIVERED');
    expect(t.ended).toBe(true);
    expect(t.mayHearLate).toBe(true);
    expect(step(t, 'IN_TRANSIT', 'dst_1')).toBe('late');
    expect(t.mayHearLate).toBe(false); // every earlier step of every lifecycle is on the timeline
    const skipped = tracked(); // a read jumped over a step: its webhook may still come
    skipped.apply({ deliveryId: 'del_1', status: 'CANCELED', source: 'reconciliation' }, t0);
    expect(skipped.mayHearLate).toBe(true);
    const unknown = tracked();
    step(unknown, 'WAITING_FOR_FERRY', 'dst_0');
    expect(unknown.mayHearLate).toBe(true);
  });

  it('applies changes that waited for the delivery id in the order the provider made them, not the order they came', () => {
    const t = tracked();
    const time = (s: number) => new Date(t0.getTime() + s * 1000).toISOString();
    t.applyInProviderOrder(
      [
        { deliveryId: 'del_1', status: 'PICKED_UP', source: 'webhook', occurredAt: time(3) },
        { deliveryId: 'del_1', status: 'UPCOMING', source: 'webhook', occurredAt: time(2) },
        { deliveryId: 'del_1', destinationId: 'dst_0', status: 'IN_TRANSIT', source: 'webhook', occurredAt: time(3) },
        // a retry that came last; the same second as UPCOMING, an earlier step
        { deliveryId: 'del_1', status: 'ASSIGNED', source: 'webhook', occurredAt: time(2) },
      ],
      t0,
    );
    expect(t.state.status).toBe('PICKED_UP');
    const steps = (subject: string) => t.state.timeline.filter((e) => e.source === 'webhook' && e.subject === subject).map((e) => `${e.status}${e.late ? ' late' : ''}`);
    expect(steps('delivery')).toEqual(['ASSIGNED', 'UPCOMING', 'PICKED_UP']);
    expect(steps('dst_0')).toEqual(['IN_TRANSIT']);
  });

  it('never leaves a terminal status', () => {
    const t = tracked();
    t.apply({ deliveryId: 'del_1', status: 'CANCELED', source: 'webhook' }, t0);
    expect(t.apply({ deliveryId: 'del_1', status: 'DELIVERED', source: 'webhook' }, t0)).toBe('stale');
    expect(t.ended).toBe(true);
    t.apply({ deliveryId: 'del_1', destinationId: 'dst_0', status: 'FAILED', source: 'webhook' }, t0);
    expect(t.apply({ deliveryId: 'del_1', destinationId: 'dst_0', status: 'DELIVERED', source: 'webhook' }, t0)).toBe('stale');
  });

  it('ignores changes of another delivery or an unknown destination', () => {
    const t = tracked();
    expect(t.apply({ deliveryId: 'del_2', status: 'ASSIGNED', source: 'webhook' }, t0)).toBe('other_delivery');
    expect(t.apply({ deliveryId: 'del_1', destinationId: 'dst_9', status: 'IN_TRANSIT', source: 'webhook' }, t0)).toBe('unknown_destination');
  });

  it('takes tracking links and price from a fetched record, and its statuses through the same rules', () => {
    const t = tracked();
    t.apply({ deliveryId: 'del_1', status: 'PICKED_UP', source: 'webhook' }, t0);
    const older = { ...t.snapshot().state };
    expect(older.destinations[1]!.trackingUrl).toBe('https://t.example/dst_1');
    expect(t.state.price).toEqual({ amount: 1000, currency: 'EUR' });
  });

  it('survives a snapshot round trip (continue-as-new)', () => {
    const t = tracked();
    t.apply({ deliveryId: 'del_1', status: 'ASSIGNED', source: 'webhook', eventId: 'evt_a' }, t0);
    const copy = new DeliveryTracker(JSON.parse(JSON.stringify(t.snapshot())));
    expect(copy.apply({ deliveryId: 'del_1', status: 'ASSIGNED', source: 'webhook', eventId: 'evt_a' }, t0)).toBe('duplicate');
    expect(copy.apply({ deliveryId: 'del_1', status: 'CREATED', source: 'webhook' }, t0)).toBe('stale');
    expect(copy.state).toEqual(t.state);
  });
});

describe('the timeline', () => {
  it('keeps the newest TIMELINE_LIMIT entries and counts the rest by source, across a continue-as-new', () => {
    let t = tracked(); // 3 entries so far (two destinations and the delivery, from the provider)
    for (let i = 0; i < 1_000; i++) t.note(new Date(t0.getTime() + i * 1000), `reconciling: check ${i}`);
    // Carried over as a continue-as-new carries it (JSON), and still bounded afterwards.
    t = new DeliveryTracker(JSON.parse(JSON.stringify(t.snapshot())));
    expect(t.apply({ deliveryId: 'del_1', status: 'ASSIGNED', source: 'webhook', eventId: 'evt_late' }, t0)).toBe('applied');
    const s = t.state;
    expect(s.timeline).toHaveLength(TIMELINE_LIMIT);
    expect(s.timelineDropped).toEqual({ count: 1_004 - TIMELINE_LIMIT, bySource: { provider: 3, workflow: 1_004 - TIMELINE_LIMIT - 3 } });
    expect(timelineTotal(s)).toBe(1_004);
    // The newest entry is the webhook's; the oldest kept is the note that came TIMELINE_LIMIT - 1 entries before it.
    expect(s.timeline.at(-1)).toMatchObject({ source: 'webhook', status: 'ASSIGNED' });
    expect(s.timeline[0]).toMatchObject({ note: `reconciling: check ${1_000 - TIMELINE_LIMIT + 1}` });
    expect(JSON.stringify(t.snapshot()).length).toBeLessThan(150_000);
  });
});
