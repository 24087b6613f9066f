/**
 * The Nexus service `deliveries` (issue #27): its description in docs/workflow-contract.json, and
 * its handlers' input checks, which refuse a bad input before anything touches Temporal (the
 * operations themselves run end to end in test/temporal/nexus.test.ts and test/cluster/nexus.test.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { HandlerError, type StartOperationContext } from 'nexus-rpc';
import { ApplicationFailure } from '@temporalio/common';
import { checkCreateDelivery, deliveriesServiceHandler } from '../../nexus/handlers';
import { deliveriesService } from '../../nexus/service';
import { deliveryRequest } from '../fixtures/orders';

const checkedIn = JSON.parse(readFileSync(join(__dirname, '../../docs/workflow-contract.json'), 'utf8'));

function validator(def: string) {
  const ajv = new Ajv2020({ allErrors: true, validateFormats: false });
  ajv.addKeyword('x-temporal-workflow');
  ajv.addKeyword('x-temporal-nexus');
  ajv.addSchema(checkedIn);
  const validate = ajv.getSchema(`${checkedIn.$id}#/$defs/${def}`)!;
  return (value: unknown) => ({ valid: validate(value) as boolean, paths: (validate.errors ?? []).map((e) => e.instancePath) });
}

const ctx = { service: 'deliveries', operation: 'x', headers: {}, abortSignal: new AbortController().signal, requestId: 'r-1', inboundLinks: [], outboundLinks: [] } as StartOperationContext;

/** The error an operation's start throws for this input. */
async function refusal(operation: keyof typeof deliveriesService.operations, input: unknown): Promise<{ handler: HandlerError; failure: ApplicationFailure }> {
  // createDelivery's start needs the worker's Nexus context before it runs the check: call the check itself.
  const start = operation === 'createDelivery' ? async () => checkCreateDelivery(input as never) : () => deliveriesServiceHandler.getOperationHandler(operation).start(ctx, input as never);
  const err = await start().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(HandlerError);
  const handler = err as HandlerError;
  expect(handler.cause).toBeInstanceOf(ApplicationFailure);
  return { handler, failure: handler.cause as ApplicationFailure };
}

describe('the Nexus service in docs/workflow-contract.json', () => {
  it('lists every operation of the service definition with its input and output', () => {
    const n = checkedIn['x-temporal-nexus'];
    expect(n.service).toBe(deliveriesService.name);
    expect(Object.keys(n.operations).sort()).toEqual(Object.keys(deliveriesService.operations).sort());
    expect(n.operations.createDelivery.input).toEqual({ $ref: '#/$defs/DeliveryWorkflowInput' });
    expect(n.operations.createDelivery.output).toEqual({ $ref: '#/$defs/DeliveryState' });
    expect(n.operations.createDelivery.kind).toMatch(/^asynchronous/);
    for (const op of ['quote', 'status', 'approveQuote', 'rejectQuote', 'updateDelivery', 'cancel']) expect(n.operations[op].kind).toBe('synchronous');
  });

  it('describes the inputs as the handlers check them', () => {
    const update = validator('NexusUpdateDeliveryInput');
    expect(update({ reference: 'A-1', update: { destinations: [{ id: 'dst_1', package_type: 'SMALL' }] } })).toEqual({ valid: true, paths: [] });
    expect(update({ reference: '', update: {} }).paths).toContain('/reference');
    expect(validator('NexusDeliveryReference')({ reference: 'A-1', extra: 1 }).valid).toBe(false);
    expect(validator('NexusRejectQuoteInput')({ reference: 'A-1', reason: 'x'.repeat(501) }).paths).toEqual(['/reason']);
  });
});

describe('the handlers refuse a bad input with InvalidDeliveryInput naming each field, before calling Temporal', () => {
  it('createDelivery: the workflow\'s own start check', async () => {
    const { reference_number: _r, ...order } = deliveryRequest();
    const { handler, failure } = await refusal('createDelivery', { reference: 'A-1', order: { ...order, destinations: [] }, approvalTimeoutMs: 5 });
    expect(handler.type).toBe('BAD_REQUEST');
    expect(handler.retryable).toBe(false);
    expect(failure.type).toBe('InvalidDeliveryInput');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.details?.[0]).toEqual([
      { field: 'order.destinations', message: 'must have at least one destination' },
      { field: 'approvalTimeoutMs', message: expect.any(String) },
    ]);
    expect(handler.message).toContain('order.destinations: must have at least one destination');
  });

  it('quote: the order, its fields named as in createDelivery', async () => {
    const { reference_number: _r, ...order } = deliveryRequest();
    const { failure } = await refusal('quote', { ...order, is_food: 'yes' });
    expect(failure.details?.[0]).toEqual([{ field: 'order.is_food', message: expect.any(String) }]);
    expect((await refusal('quote', 'not an order')).failure.details?.[0]).toEqual([{ field: 'order', message: expect.any(String) }]);
  });

  it('the synchronous operations: the reference, the update and the reason', async () => {
    expect((await refusal('status', { reference: 'A\u0007' })).failure.details?.[0]).toEqual([{ field: 'reference', message: expect.stringContaining('U+0007') }]);
    expect((await refusal('cancel', {})).failure.details?.[0]).toEqual([{ field: 'reference', message: expect.any(String) }]);
    expect((await refusal('approveQuote', { reference: 'x'.repeat(65) })).failure.details?.[0]).toEqual([{ field: 'reference', message: expect.any(String) }]);
    expect((await refusal('rejectQuote', { reference: 'A-1', reason: 'x'.repeat(501) })).failure.details?.[0]).toEqual([{ field: 'reason', message: expect.any(String) }]);
    const update = await refusal('updateDelivery', { reference: 'A-1', update: { destinations: [{ id: 'dst_1', package_type: 'HUGE' }] } });
    expect(update.failure.details?.[0]).toEqual([{ field: 'update.destinations[0].package_type', message: expect.any(String) }]);
  });
});
