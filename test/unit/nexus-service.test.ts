/**
 * The Nexus service `deliveries` (issue #27): its description in docs/workflow-contract.json, and
 * its handlers' checks, which refuse a bad input, an account the registry does not have and one
 * the endpoint does not serve before anything touches Temporal (the operations themselves run end
 * to end in test/temporal/nexus.test.ts, nexus-accounts.test.ts and test/cluster/nexus.test.ts).
 */
import { mkdtempSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { HandlerError, type StartOperationContext } from 'nexus-rpc';
import { ApplicationFailure } from '@temporalio/common';
import { createDeliveriesServiceHandler } from '../../nexus/handlers';
import { nexusEndpointsFromEnv } from '../../nexus/endpoint-accounts';
import { checkCreateDelivery, checkEndpoint, checkQuote, type NexusRefusalChecks } from '../../nexus/refusals';
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

/** The error a check throws. */
async function thrown(check: () => unknown): Promise<{ handler: HandlerError; failure: ApplicationFailure }> {
  const err = await Promise.resolve()
    .then(check)
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  expect(err).toBeInstanceOf(HandlerError);
  const handler = err as HandlerError;
  expect(handler.cause).toBeInstanceOf(ApplicationFailure);
  return { handler, failure: handler.cause as ApplicationFailure };
}

/** The error an operation's start throws for this input (the checks made before the worker's Nexus context is needed). */
function refusal(operation: keyof typeof deliveriesService.operations, input: unknown) {
  // createDelivery's start needs the worker's Nexus context before it runs the check: call the check itself.
  return thrown(operation === 'createDelivery' ? () => checkCreateDelivery({}, input, '') : () => createDeliveriesServiceHandler().getOperationHandler(operation).start(ctx, input as never));
}

describe('the Nexus service in docs/workflow-contract.json', () => {
  it('lists every operation of the service definition with its input and output', () => {
    const n = checkedIn['x-temporal-nexus'];
    expect(n.service).toBe(deliveriesService.name);
    expect(Object.keys(n.operations).sort()).toEqual(Object.keys(deliveriesService.operations).sort());
    expect(n.operations.createDelivery.input).toEqual({ $ref: '#/$defs/DeliveryWorkflowInput' });
    expect(n.operations.createDelivery.output).toEqual({ $ref: '#/$defs/DeliveryState' });
    expect(n.operations.createDelivery.kind).toMatch(/^asynchronous/);
    expect(n.operations.quote.input).toEqual({ $ref: '#/$defs/NexusQuoteInput' });
    for (const op of ['quote', 'status', 'approveQuote', 'rejectQuote', 'updateDelivery', 'cancel']) expect(n.operations[op].kind).toBe('synchronous');
  });

  it('describes the inputs as the handlers check them', () => {
    const update = validator('NexusUpdateDeliveryInput');
    expect(update({ reference: 'A-1', update: { destinations: [{ id: 'dst_1', package_type: 'SMALL' }] } })).toEqual({ valid: true, paths: [] });
    expect(update({ reference: '', update: {} }).paths).toContain('/reference');
    expect(validator('NexusDeliveryReference')({ reference: 'A-1', extra: 1 }).valid).toBe(false);
    const { reference_number: _r, ...order } = deliveryRequest();
    expect(validator('NexusQuoteInput')({ order, account: 'shop-a' })).toEqual({ valid: true, paths: [] });
    expect(validator('NexusQuoteInput')({ order, account: 'Shop A' }).paths).toEqual(['/account']);
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
    // The input with an account: the same field names.
    expect((await refusal('quote', { order: { ...order, is_food: 'yes' }, account: 'shop-a' })).failure.details?.[0]).toEqual([{ field: 'order.is_food', message: expect.any(String) }]);
    expect((await refusal('quote', { order, account: 'Shop A' })).failure.details?.[0]).toEqual([{ field: 'account', message: expect.any(String) }]);
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

describe('the handlers refuse what the worker does not serve, naming the account and the field', () => {
  const { reference_number: _r, ...order } = deliveryRequest();
  /** A registry of shop-a and shop-b, shop-a with the notification endpoint `orders`. */
  const checks: NexusRefusalChecks = {
    accounts: { get: (id: string) => (['shop-a', 'shop-b'].includes(id) ? ({ id } as never) : undefined) },
    notifyEndpoints: (account) => new Set(account === 'shop-a' ? ['orders'] : []),
  };

  it('createDelivery and quote: an account the registry does not have is BAD_REQUEST InvalidDeliveryInput on `account`', async () => {
    const created = await thrown(() => checkCreateDelivery(checks, { reference: 'A-1', account: 'nobody', order }, ''));
    expect(created.handler.type).toBe('BAD_REQUEST');
    expect(created.handler.retryable).toBe(false);
    expect(created.failure.type).toBe('InvalidDeliveryInput');
    expect(created.failure.details?.[0]).toEqual([{ field: 'account', message: expect.stringContaining('no courier account nobody') }]);
    expect(created.handler.message).toContain('account: no courier account nobody');
    const quoted = await thrown(() => checkQuote(checks, order, 'nobody', ''));
    expect(quoted.handler.type).toBe('BAD_REQUEST');
    expect(quoted.failure.details?.[0]).toEqual([{ field: 'account', message: expect.stringContaining('no courier account nobody') }]);
    // No account is `default`, which this registry does not have either.
    expect((await thrown(() => checkQuote(checks, order, undefined, ''))).failure.details?.[0]).toEqual([{ field: 'account', message: expect.stringContaining('no courier account default') }]);
    expect(() => checkQuote(checks, order, 'shop-a', '')).not.toThrow();
  });

  it('createDelivery: every start the workflow\'s start check refuses (another account\'s notification endpoint); quote: the courier\'s clock rule', async () => {
    const notify = await thrown(() => checkCreateDelivery(checks, { reference: 'A-1', account: 'shop-b', order, notify: { endpoint: 'orders' } }, ''));
    expect(notify.failure.details?.[0]).toEqual([{ field: 'notify.endpoint', message: expect.stringContaining('no notification endpoint named orders') }]);
    expect(() => checkCreateDelivery(checks, { reference: 'A-1', account: 'shop-a', order, notify: { endpoint: 'orders' } }, '')).not.toThrow();
    const past = await thrown(() => checkQuote(checks, { ...order, desired_pickup_time: new Date(Date.now() - 3_600_000).toISOString() }, 'shop-a', ''));
    expect(past.failure.details?.[0]).toEqual([{ field: 'order.desired_pickup_time', message: 'must not be in the past' }]);
  });

  describe('with endpoint account lists (DELIVERY_NEXUS_ENDPOINTS_FILE)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'nexus-endpoints-'));
    const file = join(dir, 'endpoints.json');
    const write = (endpoints: unknown[]) => {
      writeFileSync(`${file}.tmp`, JSON.stringify({ endpoints }));
      renameSync(`${file}.tmp`, file);
    };
    write([
      { name: 'deliveries-a', callerNamespace: 'orders-a', accounts: ['shop-a'] },
      { name: 'deliveries-b', callerNamespace: 'orders-b', accounts: ['shop-b', 'nobody'] },
    ]);
    const lines: object[] = [];
    const withEndpoints: NexusRefusalChecks = { ...checks, endpoints: nexusEndpointsFromEnv({ DELIVERY_NEXUS_ENDPOINTS_FILE: file }, (l) => lines.push(l)) };

    it('an account outside the endpoint\'s list is UNAUTHORIZED AccountNotAllowed on `account`, before the registry is asked (so an unknown account reads the same)', async () => {
      expect(() => checkEndpoint(withEndpoints, 'deliveries-a', 'shop-a')).not.toThrow();
      const other = await thrown(() => checkCreateDelivery(withEndpoints, { reference: 'A-1', account: 'shop-b', order }, 'deliveries-a'));
      expect(other.handler.type).toBe('UNAUTHORIZED');
      expect(other.handler.retryable).toBe(false);
      expect(other.failure.type).toBe('AccountNotAllowed');
      expect(other.failure.nonRetryable).toBe(true);
      expect(other.failure.details?.[0]).toEqual([{ field: 'account', message: expect.stringContaining('account shop-b: not served through the Nexus endpoint deliveries-a') }]);
      const unknown = await thrown(() => checkQuote(withEndpoints, order, 'nobody', 'deliveries-a'));
      expect(unknown.failure.message).toBe(other.failure.message.replace('shop-b', 'nobody'));
      // Another account's notification endpoints are not told either.
      const notify = await thrown(() => checkCreateDelivery(withEndpoints, { reference: 'A-1', account: 'shop-a', order, notify: { endpoint: 'nope' } }, 'deliveries-b'));
      expect(notify.failure.type).toBe('AccountNotAllowed');
      // Listed but not in the registry: the registry still refuses it.
      expect((await thrown(() => checkQuote(withEndpoints, order, 'nobody', 'deliveries-b'))).failure.type).toBe('InvalidDeliveryInput');
    });

    it('an endpoint the file does not list, and a request whose endpoint the server does not name (before 1.30), serve no account', async () => {
      expect((await thrown(() => checkEndpoint(withEndpoints, 'deliveries', 'shop-a'))).failure.message).toContain('the Nexus endpoint deliveries serves no account here');
      expect((await thrown(() => checkEndpoint(withEndpoints, '', 'shop-a'))).failure.message).toContain('did not name the endpoint this request came through (server 1.30 or later does)');
      expect(() => checkEndpoint({ ...checks }, '', 'shop-b')).not.toThrow(); // no file: every endpoint serves every account
    });

    it('a change to the file applies from the next request; an invalid one is refused naming the endpoint and field, the last valid kept', async () => {
      write([{ name: 'deliveries-a', callerNamespace: 'orders-a', accounts: ['shop-a', 'shop-b'] }]);
      expect(() => checkEndpoint(withEndpoints, 'deliveries-a', 'shop-b')).not.toThrow();
      expect((await thrown(() => checkEndpoint(withEndpoints, 'deliveries-b', 'shop-b'))).failure.type).toBe('AccountNotAllowed');
      write([{ name: 'deliveries-a', callerNamespace: 'orders-a', accounts: ['Shop B'] }]);
      expect(() => checkEndpoint(withEndpoints, 'deliveries-a', 'shop-b')).not.toThrow();
      expect(lines.at(-1)).toEqual({ level: 'ERROR', msg: 'Nexus endpoints file refused, the last valid one kept', error: expect.stringContaining('endpoint deliveries-a: accounts[0]: ') });
      expect(() => nexusEndpointsFromEnv({ DELIVERY_NEXUS_ENDPOINTS_FILE: file })).toThrow(/^invalid Nexus endpoints file .*: endpoint deliveries-a: accounts\[0\]: /);
    });
  });
});
