import {
  CreateDeliveryRequestSchema,
  DeliveryRecordSchema,
  ErrorBodySchema,
  LIMITS,
  QuoteSchema,
  ReferenceNumber,
  UpdateDeliveryRequestSchema,
  WebhookEventSchema,
} from '../../provider/schemas';
import { fieldIssues } from '../../provider/validation';
import { pickupTimeIssues } from '../../provider/rules';
import { deliveryRequest, destination } from '../fixtures/orders';

/** A delivery record as the provider would send it, with this reference. */
function recordWithReference(reference: string) {
  const req = deliveryRequest({ reference_number: reference });
  const now = new Date().toISOString();
  return {
    id: 'del_1',
    status: 'CREATED',
    reference_number: reference,
    is_food: false,
    desired_pickup_time: req.desired_pickup_time,
    pickup_location: req.pickup_location,
    price: { amount: 1250, currency: 'EUR' },
    created_at: now,
    updated_at: now,
    destinations: req.destinations.map((d, i) => ({ ...d, id: `dst_${i}`, status: 'PENDING', tracking_url: `https://t.example/${i}`, reference_number: null, updated_at: now })),
  };
}

/** The field paths a body is rejected for, as a caller would see them. */
function rejectedFields(body: unknown): string[] {
  const r = CreateDeliveryRequestSchema.safeParse(body);
  return r.success ? [] : fieldIssues(r.error).map((i) => i.field);
}

describe('creation request', () => {
  it('accepts a complete valid request with optional fields', () => {
    const body = deliveryRequest({ reference_number: 'A-1042', is_food: true }, 3);
    body.destinations[0]!.reference_number = 'A-1042-1';
    body.pickup_location.first_name = 'Mia';
    body.pickup_location.email = 'mia@example.com';
    body.pickup_location.comment = 'ring twice';
    expect(rejectedFields(body)).toEqual([]);
  });

  it.each([
    ['+4915112345678', true],
    ['+12', true],
    ['4915112345678', false],
    ['+0151123', false],
    ['+49 151 1234', false],
    ['+1234567890123456', false],
    ['+', false],
  ])('phone %s is valid E.164: %s', (phone, ok) => {
    const body = deliveryRequest();
    body.destinations[0]!.location.phone = phone;
    expect(rejectedFields(body)).toEqual(ok ? [] : ['destinations[0].location.phone']);
  });

  it('requires the destination phone but not the pickup phone', () => {
    const body = deliveryRequest() as unknown as { destinations: { location: Record<string, unknown> }[] };
    delete body.destinations[0]!.location.phone;
    expect(rejectedFields(body)).toEqual(['destinations[0].location.phone']);
  });

  it('rejects a time window that does not end after it starts, naming the end', () => {
    const d = destination(0);
    const body = deliveryRequest({ destinations: [{ ...d, time_window_end: d.time_window_start }] });
    expect(rejectedFields(body)).toEqual(['destinations[0].time_window_end']);
  });

  it.each(['2026-01-31T12:00:00+01:00', '2026-01-31 12:00:00', 'tomorrow', '2026-02-30T12:00:00Z'])('rejects the non-UTC or invalid time %s', (t) => {
    expect(rejectedFields(deliveryRequest({ desired_pickup_time: t }))).toEqual(['desired_pickup_time']);
  });

  it('takes one to at most 100 destinations', () => {
    expect(rejectedFields(deliveryRequest({}, LIMITS.maxDestinations))).toEqual([]);
    expect(rejectedFields(deliveryRequest({}, LIMITS.maxDestinations + 1))).toEqual(['destinations']);
    expect(rejectedFields(deliveryRequest({ destinations: [] }))).toEqual(['destinations']);
  });

  it('limits names and company to 100 characters, addresses to 300, references to 64', () => {
    const body = deliveryRequest({ reference_number: 'r'.repeat(65) });
    body.pickup_location.last_name = 'n'.repeat(101);
    body.pickup_location.company = 'c'.repeat(101);
    body.destinations[0]!.location.address = 'a'.repeat(301);
    expect(rejectedFields(body).sort()).toEqual(
      ['destinations[0].location.address', 'pickup_location.company', 'pickup_location.last_name', 'reference_number'].sort(),
    );
    const atLimit = deliveryRequest({ reference_number: 'r'.repeat(64) });
    atLimit.pickup_location.last_name = 'n'.repeat(100);
    atLimit.destinations[0]!.location.address = 'a'.repeat(300);
    expect(rejectedFields(atLimit)).toEqual([]);
  });

  it('rejects an unknown package type and says which values exist', () => {
    const body = deliveryRequest() as unknown as { destinations: { package_type: string }[] };
    body.destinations[0]!.package_type = 'HUGE';
    const r = CreateDeliveryRequestSchema.safeParse(body);
    expect(r.success).toBe(false);
    const issue = fieldIssues(r.error!)[0]!;
    expect(issue.field).toBe('destinations[0].package_type');
    expect(issue.message).toMatch(/SMALL.*MEDIUM.*LARGE.*XLARGE/);
  });

  it('rejects wrong types, unknown fields and a missing food flag', () => {
    const body = { ...deliveryRequest(), is_food: 'yes', surprise: 1 };
    expect(rejectedFields(body).sort()).toEqual(['(body)', 'is_food']);
  });

  it('rejects an invalid email', () => {
    const body = deliveryRequest();
    body.destinations[0]!.location.email = 'not-an-email';
    expect(rejectedFields(body)).toEqual(['destinations[0].location.email']);
  });
});

describe('reference numbers', () => {
  const issues = (reference: string) => {
    const r = ReferenceNumber.safeParse(reference);
    return r.success ? [] : r.error.issues.map((i) => i.message);
  };

  it.each(['ORD-€42', '注文-1001', 'Müller-7', 'طلب-12', 'Заказ №5', '📦-1', '👩‍👩‍👧-family', 'A B'])('accepts the Unicode reference %s', (reference) => {
    expect(issues(reference)).toEqual([]);
    expect(rejectedFields(deliveryRequest({ reference_number: reference }))).toEqual([]);
  });

  it.each([
    ['a newline', 'ORD-1\n', 'control character (U+000A at position 5)'],
    ['a carriage return', '\rORD-1', 'control character (U+000D at position 0)'],
    ['a tab', 'ORD\t1', 'control character (U+0009 at position 3)'],
    ['NUL', 'ORD-\u00001', 'control character (U+0000 at position 4)'],
    ['DEL', 'ORD-\u007f1', 'control character (U+007F at position 4)'],
    ['a C1 control (NEL)', 'ORD-\u00851', 'control character (U+0085 at position 4)'],
    ['the line separator', 'ORD\u2028-1', 'line or paragraph separator (U+2028 at position 3)'],
    ['the paragraph separator', 'ORD\u2029-1', 'line or paragraph separator (U+2029 at position 3)'],
    ['a right-to-left override', 'ORD-\u202e12', 'bidirectional control character (U+202E at position 4)'],
    ['a bidi isolate', '\u2066ORD-1', 'bidirectional control character (U+2066 at position 0)'],
    ['a lone surrogate', 'ORD-\ud83d', 'lone surrogate (not well-formed Unicode) (U+D83D at position 4)'],
  ])('refuses %s, saying which character and where', (_what, reference, said) => {
    expect(issues(reference)).toEqual([`must not contain a ${said}`]);
    // In a request the field is named, wherever the reference sits.
    expect(rejectedFields(deliveryRequest({ reference_number: reference }))).toEqual(['reference_number']);
    const body = deliveryRequest();
    body.destinations[0]!.reference_number = reference;
    expect(rejectedFields(body)).toEqual(['destinations[0].reference_number']);
  });

  it('counts the limit of 64 in UTF-16 code units, so an emoji counts two', () => {
    expect(issues('€'.repeat(64))).toEqual([]);
    expect(issues('注'.repeat(65))).toEqual(['must be at most 64 characters (UTF-16 code units: an emoji counts 2)']);
    expect(issues('📦'.repeat(32))).toEqual([]);
    expect(issues('📦'.repeat(32) + 'x')).toHaveLength(1);
    expect(issues('')).toEqual(['must not be empty']);
  });

  it('is read leniently in records: a reference another system stored never breaks a list', () => {
    expect(DeliveryRecordSchema.safeParse({ ...recordWithReference('ORD\t1') }).success).toBe(true);
  });
});

describe('update request', () => {
  it('needs at least one change', () => {
    expect(UpdateDeliveryRequestSchema.safeParse({}).success).toBe(false);
    expect(UpdateDeliveryRequestSchema.safeParse({ is_food: true }).success).toBe(true);
  });
  it('addresses destinations by id', () => {
    expect(UpdateDeliveryRequestSchema.safeParse({ destinations: [{ package_type: 'SMALL' }] }).success).toBe(false);
    expect(UpdateDeliveryRequestSchema.safeParse({ destinations: [{ id: 'dst_1', package_type: 'SMALL' }] }).success).toBe(true);
  });
});

describe('records from the provider', () => {
  const record = () => {
    const req = deliveryRequest({ reference_number: 'A-1' });
    const now = new Date().toISOString();
    return {
      id: 'del_1',
      status: 'CREATED',
      reference_number: 'A-1',
      is_food: false,
      desired_pickup_time: req.desired_pickup_time,
      pickup_location: req.pickup_location,
      price: { amount: 1250, currency: 'EUR' },
      created_at: now,
      updated_at: now,
      destinations: req.destinations.map((d, i) => ({
        ...d,
        id: `dst_${i}`,
        status: 'PENDING',
        tracking_url: `https://track.example.com/dst_${i}`,
        reference_number: null,
        updated_at: now,
      })),
    };
  };

  it('accepts a delivery record', () => {
    expect(DeliveryRecordSchema.safeParse(record()).success).toBe(true);
  });

  it('keeps an unknown future status instead of failing', () => {
    const r = DeliveryRecordSchema.parse({ ...record(), status: 'RETURNED_TO_SENDER' });
    expect(r.status).toBe('RETURNED_TO_SENDER');
  });

  it('rejects a price that is not an integer in minor units', () => {
    expect(DeliveryRecordSchema.safeParse({ ...record(), price: { amount: 12.5, currency: 'EUR' } }).success).toBe(false);
    expect(QuoteSchema.safeParse({ price: { amount: 1250, currency: 'eur' }, expires_at: new Date().toISOString() }).success).toBe(false);
  });

  it('requires a tracking link on every destination', () => {
    const r = record() as { destinations: Record<string, unknown>[] };
    delete r.destinations[0]!.tracking_url;
    expect(DeliveryRecordSchema.safeParse(r).success).toBe(false);
  });
});

describe('webhook events', () => {
  const created_at = '2026-01-31T12:00:00Z';
  it('accepts both event types', () => {
    expect(WebhookEventSchema.safeParse({ id: 'evt_1', type: 'delivery.status_changed', created_at, data: { delivery_id: 'del_1', status: 'ASSIGNED' } }).success).toBe(true);
    expect(
      WebhookEventSchema.safeParse({ id: 'evt_2', type: 'destination.status_changed', created_at, data: { delivery_id: 'del_1', destination_id: 'dst_1', status: 'DELIVERED' } })
        .success,
    ).toBe(true);
  });
  it('requires the destination id on destination events', () => {
    expect(WebhookEventSchema.safeParse({ id: 'evt_2', type: 'destination.status_changed', created_at, data: { delivery_id: 'del_1', status: 'DELIVERED' } }).success).toBe(false);
  });
  it('rejects unknown event types and ids without the evt_ prefix', () => {
    expect(WebhookEventSchema.safeParse({ id: 'evt_1', type: 'delivery.deleted', created_at, data: { delivery_id: 'del_1', status: 'X' } }).success).toBe(false);
    expect(WebhookEventSchema.safeParse({ id: '1', type: 'delivery.status_changed', created_at, data: { delivery_id: 'del_1', status: 'X' } }).success).toBe(false);
  });
});

describe('error body', () => {
  it('carries field details', () => {
    const body = { error: { code: 'validation_failed', message: 'invalid', details: [{ field: 'is_food', message: 'required' }] } };
    expect(ErrorBodySchema.parse(body).error.details).toHaveLength(1);
  });
});

describe('pickup time', () => {
  it('may not be in the past beyond a minute of clock skew', () => {
    const now = Date.parse('2026-01-31T12:00:00Z');
    expect(pickupTimeIssues('2026-01-31T11:59:30Z', now)).toEqual([]);
    expect(pickupTimeIssues('2026-01-31T11:58:00Z', now)).toEqual([{ field: 'desired_pickup_time', message: 'must not be in the past' }]);
  });
});
