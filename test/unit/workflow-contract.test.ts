import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { deliveryInputIssues } from '../../activities/start-checks';
import { DeliveryStateSchema, DeliveryWorkflowInputSchema } from '../../contract/schemas';
import { workflowContractDocument } from '../../scripts/workflow-contract';
import type { DeliveryState } from '../../contract/delivery-types';
import { DELIVERY_SEARCH_ATTRIBUTES } from '../../contract/search-attributes';
import { ACCOUNT_PAUSED, PROVIDER_FAILURE_TYPES } from '../../contract/failures';
import { deliveryRequest } from '../fixtures/orders';

const checkedIn = JSON.parse(readFileSync(join(__dirname, '../../docs/workflow-contract.json'), 'utf8'));
const NOW = Date.now();

function validInput() {
  const { reference_number: _r, ...order } = deliveryRequest({ is_food: true }, 2);
  return { reference: 'A-1042', order, maxPrice: { amount: 1500, currency: 'EUR' } };
}

/** A JSON Schema validator, as another language's client would use the document. */
function validator(def: string) {
  const ajv = new Ajv2020({ allErrors: true, validateFormats: false });
  ajv.addKeyword('x-temporal-workflow');
  ajv.addKeyword('x-temporal-nexus');
  ajv.addSchema(checkedIn);
  const validate = ajv.getSchema(`${checkedIn.$id}#/$defs/${def}`);
  if (!validate) throw new Error(`no definition ${def}`);
  return (value: unknown) => ({ valid: validate(value) as boolean, paths: (validate.errors ?? []).map((e) => e.instancePath) });
}

describe('the workflow contract (docs/workflow-contract.json)', () => {
  it('in docs/ matches the zod schemas (run `npm run workflow-schema` after changing contract/schemas.ts or provider/schemas.ts)', () => {
    expect(checkedIn).toEqual(workflowContractDocument());
  });

  it('describes the input, the result, the status query, the four updates and the signal', () => {
    const w = checkedIn['x-temporal-workflow'];
    expect(w.workflowType).toBe('delivery');
    expect(w.input).toEqual({ $ref: '#/$defs/DeliveryWorkflowInput' });
    expect(w.result).toEqual({ $ref: '#/$defs/DeliveryState' });
    expect(w.queries.status.result).toEqual({ $ref: '#/$defs/DeliveryState' });
    expect(Object.keys(w.updates).sort()).toEqual(['approveQuote', 'rejectQuote', 'startChecked', 'updateDelivery']);
    expect(w.updates.updateDelivery.args).toEqual([{ $ref: '#/$defs/UpdateDeliveryRequest' }]);
    expect(w.signals.statusChanged.args).toEqual([{ $ref: '#/$defs/StatusChange' }]);
    expect(w.searchAttributes.map((a: { name: string }) => a.name)).toEqual(DELIVERY_SEARCH_ATTRIBUTES.map((k) => k.name));
    expect(Object.keys(w.failures)).toContain('InvalidDeliveryInput');
    // Every failure type an activity of the delivery can show in `describe`, the paused account's too.
    expect(Object.keys(w.failures)).toEqual(expect.arrayContaining([...Object.values(PROVIDER_FAILURE_TYPES), ACCOUNT_PAUSED]));
    for (const $ref of JSON.stringify(checkedIn).match(/#\/\$defs\/[A-Za-z]+/g) ?? []) expect(checkedIn.$defs[$ref.split('/').at(-1)!]).toBeDefined();
  });

  it('accepts a valid start input and refuses an invalid one at the same fields as the workflow', () => {
    const input = validator('DeliveryWorkflowInput');
    expect(input(validInput())).toEqual({ valid: true, paths: [] });
    expect(deliveryInputIssues(validInput(), NOW)).toEqual([]);

    const bad = { reference: 'CLI-BAD-1', order: { destinations: [] } };
    const fromSchema = input(bad);
    expect(fromSchema.valid).toBe(false);
    expect(fromSchema.paths).toEqual(expect.arrayContaining(['/order', '/order/destinations']));
    const fields = deliveryInputIssues(bad, NOW).map((i) => i.field);
    expect(fields).toEqual(['order.desired_pickup_time', 'order.pickup_location', 'order.destinations', 'order.is_food']);

    const extra = { ...validInput(), resume: {} };
    expect(input(extra).valid).toBe(false);
    expect(deliveryInputIssues(extra, NOW)).toEqual([{ field: 'input', message: 'Unrecognized key: "resume"' }]);
    const phone = validInput();
    phone.order.destinations[1]!.location.phone = '0151 123';
    expect(input(phone).paths).toEqual(['/order/destinations/1/location/phone']);
  });

  it('holds the status query\'s answer the workflow gives', () => {
    const state: DeliveryState = {
      reference: 'A-1042',
      phase: 'following',
      deliveryId: 'dlv_1',
      status: 'ASSIGNED',
      destinations: [{ id: 'dst_1', status: 'PENDING', trackingUrl: 'http://127.0.0.1:4010/track/dst_1', referenceNumber: null, packageType: 'MEDIUM', timeWindowStart: '2026-01-31T12:00:00Z', timeWindowEnd: '2026-01-31T13:00:00Z' }],
      quote: { price: { amount: 1250, currency: 'EUR' }, expires_at: '2026-01-31T11:15:00Z' },
      price: { amount: 1250, currency: 'EUR' },
      isFood: true,
      timeline: [{ at: '2026-01-31T11:00:00.000Z', subject: 'delivery', status: 'ASSIGNED', source: 'webhook', eventId: 'evt_1' }],
    };
    expect(validator('DeliveryState')(state)).toEqual({ valid: true, paths: [] });
    expect(DeliveryStateSchema.safeParse(state).success).toBe(true);
    expect(validator('DeliveryState')({ ...state, phase: 'lost' }).valid).toBe(false);
  });
});

describe('the start check (activities/start-checks.ts)', () => {
  it('refuses a pickup time in the past, naming the field', () => {
    const input = validInput();
    input.order.desired_pickup_time = new Date(NOW - 3_600_000).toISOString().replace(/\.\d+Z$/, 'Z');
    expect(deliveryInputIssues(input, NOW)).toEqual([{ field: 'order.desired_pickup_time', message: 'must not be in the past' }]);
  });

  it('names the whole input when it is not an object', () => {
    expect(deliveryInputIssues('just a string', NOW)).toEqual([{ field: 'input', message: expect.stringMatching(/expected object/) }]);
    expect(deliveryInputIssues(undefined, NOW)[0]!.field).toBe('input');
  });

  it('keeps the limits the client library applies', () => {
    const input = { ...validInput(), reference: 'x'.repeat(65), approvalTimeoutMs: 10, followUp: { quietMs: 5 } };
    expect(deliveryInputIssues(input, NOW).map((i) => i.field)).toEqual(['reference', 'approvalTimeoutMs', 'followUp.quietMs']);
    expect(DeliveryWorkflowInputSchema.safeParse(validInput()).success).toBe(true);
  });
});
