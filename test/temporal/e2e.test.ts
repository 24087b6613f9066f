/**
 * End to end with everything real: client library and CLI → workflow → activities over HTTP →
 * simulator → signed webhooks → bridge → workflow, on the shared dev server.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { InvalidInputError } from '../../client/delivery-client';
import { UnauthorizedError } from '../../provider/errors';
import { deliveryWorkflowId } from '../../contract/workflow-ids';
import type { DeliveryState } from '../../contract/delivery-types';
import { deliveryRequest } from '../fixtures/orders';
import { createdDelivery, driveToDelivered, eventually, startStack, type Stack } from '../helpers/stack';

const run = promisify(execFile);
const CLI = join(__dirname, '../../client/delivery.js');
let stack: Stack;
let seq = 0;

beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack.stop());

function newReference(): string {
  return `E2E-${Date.now().toString(36)}-${++seq}`;
}
function order(destinations = 2) {
  const { reference_number: _r, ...o } = deliveryRequest({ is_food: true }, destinations);
  return o;
}
const following = (reference: string): Promise<DeliveryState> => createdDelivery(stack, reference);
function providerDeliveriesWithReference(reference: string) {
  return stack.sim.deliveries().filter((d) => d.delivery.reference_number === reference);
}

describe('a delivery, end to end', () => {
  it('is created once, followed through signed webhooks, and ends DELIVERED with a tracking link per destination', async () => {
    const reference = newReference();
    const started = await stack.deliveries.startDelivery(order(3), { reference });
    expect(started).toEqual({ reference, account: 'default', workflowId: `delivery:${reference}`, alreadyStarted: false, checked: true });
    const again = await stack.deliveries.startDelivery(order(3), { reference });
    expect(again.alreadyStarted).toBe(true);

    const s = await following(reference);
    driveToDelivered(stack.sim, s.deliveryId!);
    const result = await stack.deliveries.result(reference);

    expect(result.status).toBe('DELIVERED');
    expect(result.destinations).toHaveLength(3);
    for (const d of result.destinations) {
      expect(d.status).toBe('DELIVERED');
      expect(d.trackingUrl).toBe(`${stack.simUrl}/track/${d.id}`);
    }
    const atProvider = providerDeliveriesWithReference(reference);
    expect(atProvider).toHaveLength(1);
    expect(result.price).toEqual(atProvider[0]!.delivery.price);
    // Every change after creation came in through a webhook and the bridge.
    const changes = result.timeline.filter((e) => e.status && e.source === 'webhook');
    expect(changes.length).toBe(4 /* ASSIGNED..DELIVERED */ + 3 * 2 /* IN_TRANSIT, DELIVERED per stop */);
    expect(changes.every((e) => e.eventId?.startsWith('evt_'))).toBe(true);
  });

  it('is CANCELED at the provider when the workflow is cancelled', async () => {
    const reference = newReference();
    await stack.deliveries.startDelivery(order(), { reference });
    const s = await following(reference);
    stack.sim.advance(s.deliveryId!); // ASSIGNED
    const cancelled = await stack.deliveries.cancelDelivery(reference);
    expect(cancelled.cancellation?.outcome).toBe('cancelled');
    expect(cancelled.status).toBe('CANCELED');
    const atProvider = providerDeliveriesWithReference(reference)[0]!;
    expect(atProvider.delivery.status).toBe('CANCELED');
    expect(atProvider.order.status).toBe('CANCELED');
  });

  it('applies an update through the provider and rejects one that the contract does not allow', async () => {
    const reference = newReference();
    await stack.deliveries.startDelivery(order(1), { reference });
    const s = await following(reference);
    const updated = await stack.deliveries.updateDelivery(reference, { destinations: [{ id: s.destinations[0]!.id, package_type: 'XLARGE' }] });
    expect(updated.destinations[0]!.packageType).toBe('XLARGE');
    expect(updated.price!.amount).toBeGreaterThan(s.price!.amount);
    expect(providerDeliveriesWithReference(reference)[0]!.delivery.destinations[0]!.package_type).toBe('XLARGE');

    await expect(stack.deliveries.updateDelivery(reference, { destinations: [{ id: 'x', package_type: 'HUGE' as never }] })).rejects.toThrow(InvalidInputError);
    stack.sim.advance(s.deliveryId!, { status: 'PICKED_UP' });
    await eventually('the pickup webhook', async () => ((await stack.deliveries.getStatus(reference)).status === 'PICKED_UP' ? true : undefined));
    await expect(stack.deliveries.updateDelivery(reference, { is_food: false })).rejects.toThrow(/cannot be updated once it is PICKED_UP/);
    await stack.temporal.workflow.getHandle(`delivery:${reference}`).terminate('test done');
  });

  it('refuses an invalid order before any workflow starts, naming the field', async () => {
    const reference = newReference();
    const bad = order(1);
    bad.destinations[0]!.location.phone = '0151 123';
    const err = await stack.deliveries.startDelivery(bad, { reference }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidInputError);
    expect((err as InvalidInputError).message).toMatch(/order\.destinations\[0\]\.location\.phone: must be an E\.164 phone number/);
    await expect(stack.deliveries.getStatus(reference)).rejects.toThrow(/no delivery with reference/);
  });

  it('is found by one list query on its reference, its provider id or its status, and its search attributes hold no personal data', async () => {
    const reference = newReference();
    const o = order(2);
    await stack.deliveries.startDelivery(o, { reference });
    const s = await following(reference);
    driveToDelivered(stack.sim, s.deliveryId!);
    await stack.deliveries.result(reference);
    const find = (query: string) =>
      eventually(`visibility: ${query}`, async () => {
        for await (const wf of stack.temporal.workflow.list({ query })) if (wf.workflowId === `delivery:${reference}`) return wf;
        return undefined;
      });
    await find(`OrderReference = '${reference}'`);
    await find(`DeliveryId = '${s.deliveryId}'`);
    const found = await find(`DeliveryStatus = 'DELIVERED' AND IsFood = true AND DestinationCount = 2`);
    const all = Object.fromEntries(found.typedSearchAttributes.getAll().map((p) => [p.key.name, p.value]));
    // Ours, exactly; besides them only Temporal's own (build ids, patch markers).
    const attributes = Object.fromEntries(Object.entries(all).filter(([k]) => !['BuildIds', 'TemporalChangeVersion'].includes(k)));
    expect(attributes).toEqual({
      OrderReference: reference,
      DeliveryId: s.deliveryId,
      DeliveryStatus: 'DELIVERED',
      IsFood: true,
      DestinationCount: 2,
      QuotedPrice: s.quote!.price.amount,
      DeliveryAccount: 'default',
      DeliveryStatusSince: expect.any(Date), // when it entered DELIVERED
    });
    const personal = [o.pickup_location.last_name, o.pickup_location.address, ...o.destinations.flatMap((d) => [d.location.last_name, d.location.phone, d.location.address])];
    for (const p of personal) expect(JSON.stringify(all)).not.toContain(p);
  });

  it('quotes without creating a delivery', async () => {
    const before = stack.sim.deliveries().length;
    const quote = await stack.deliveries.quote(order(2));
    expect(Number.isInteger(quote.price.amount)).toBe(true);
    expect(stack.sim.deliveries().length).toBe(before);
  });
});

describe('a bad API key', () => {
  let badKeyStack: Stack;
  beforeAll(async () => {
    badKeyStack = await startStack({ workerApiKey: 'not-a-valid-key' });
  });
  afterAll(() => badKeyStack.stop());

  it("pauses the account's deliveries instead of failing them: they wait, with one refused call per probe period, never a retry storm", async () => {
    const reference = newReference();
    await badKeyStack.deliveries.startDelivery(order(1), { reference });
    const refusals = () => badKeyStack.sim.requestLog().filter((r) => r.status === 401);
    const first = await eventually('the first refused call', () => refusals()[0]);
    const second = await eventually('a probe one period later', () => refusals()[1], 30_000);
    expect(Date.parse(second.time) - Date.parse(first.time)).toBeGreaterThanOrEqual(4_000);
    expect(refusals().length).toBeLessThanOrEqual(3);
    const state = await badKeyStack.deliveries.getStatus(reference);
    expect(state.phase).not.toBe('ended'); // waiting for a corrected key, not failed
    expect(state.deliveryId).toBeUndefined();
    expect((await badKeyStack.temporal.workflow.getHandle(deliveryWorkflowId(reference)).describe()).status.name).toBe('RUNNING');
    await badKeyStack.temporal.workflow.getHandle(deliveryWorkflowId(reference)).terminate('test over');
  });

  it('is reported by checkKey', async () => {
    const { DeliveryClient } = await import('../../client/delivery-client');
    const { ProviderClient } = await import('../../provider/client');
    const client = new DeliveryClient({ temporal: badKeyStack.temporal, taskQueue: 'unused', provider: new ProviderClient({ baseUrl: badKeyStack.simUrl, apiKey: 'nope' }) });
    await expect(client.checkKey()).rejects.toThrow(UnauthorizedError);
    await client.close();
  });
});

describe('the delivery CLI', () => {
  const cli = (args: string[], env: NodeJS.ProcessEnv = stack.cliEnv) =>
    run(process.execPath, [CLI, ...args], { env, timeout: 60_000 }).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
    );
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'delivery-cli-'));
  });

  it('creates a delivery with the quote that `quote --json` printed, asking for no second quote', async () => {
    const reference = newReference();
    const orderFile = join(dir, 'quoted-order.json');
    const quoteFile = join(dir, 'quote.json');
    const mine = order(3);
    mine.pickup_location = { ...mine.pickup_location, comment: `cli quote ${reference}` };
    writeFileSync(orderFile, JSON.stringify(mine));
    const quoted = await cli(['quote', '--order', orderFile, '--json']);
    expect(quoted.code).toBe(0);
    writeFileSync(quoteFile, quoted.stdout);
    const quotesBefore = stack.sim.requestLog().filter((e) => e.path === '/v1/quotes').length;

    expect((await cli(['create', '--reference', reference, '--order', orderFile, '--quote', quoteFile, '--check-timeout', '60'])).code).toBe(0);
    const s = await following(reference);
    expect(s.quote?.price).toEqual(JSON.parse(quoted.stdout).price);
    expect(stack.sim.requestLog().filter((e) => e.path === '/v1/quotes')).toHaveLength(quotesBefore);
  });

  it('creates, shows and watches a delivery to its end', async () => {
    const reference = newReference();
    const orderFile = join(dir, 'order.json');
    writeFileSync(orderFile, JSON.stringify(order(2)));

    const created = await cli(['create', '--reference', reference, '--order', orderFile, '--json', '--check-timeout', '60']);
    expect(created.code).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ reference, alreadyStarted: false });

    const s = await following(reference);
    const status = await cli(['status', reference]);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(`reference   ${reference}`);
    for (const d of s.destinations) expect(status.stdout).toContain(d.trackingUrl);

    const watching = cli(['watch', reference, '--json']);
    await new Promise((r) => setTimeout(r, 1_500));
    driveToDelivered(stack.sim, s.deliveryId!);
    const watched = await watching;
    expect(watched.code).toBe(0);
    const lines = watched.stdout.trim().split('\n').map((l) => JSON.parse(l) as { change?: { status?: string }; final?: DeliveryState });
    expect(lines.at(-1)!.final!.status).toBe('DELIVERED');
    expect(lines.filter((l) => l.change?.status === 'DELIVERED').length).toBeGreaterThanOrEqual(3);
  });

  it('cancels, and lists deliveries by status', async () => {
    const reference = newReference();
    const orderFile = join(dir, 'order2.json');
    writeFileSync(orderFile, JSON.stringify(order(1)));
    expect((await cli(['create', '--reference', reference, '--order', orderFile, '--check-timeout', '60'])).code).toBe(0);
    await following(reference);
    const cancelled = await cli(['cancel', reference]);
    expect(cancelled.code).toBe(0);
    expect(cancelled.stdout).toContain('cancelled at the provider');
    await eventually('visibility to show the cancellation', async () => {
      const listed = await cli(['list', '--status', 'CANCELED', '--json']);
      const rows = JSON.parse(listed.stdout) as { reference: string }[];
      return rows.some((r) => r.reference === reference) ? true : undefined;
    });
  });

  it('exits 2 naming the field for an invalid order, 3 for an unknown reference, 4 for a bad key', async () => {
    const orderFile = join(dir, 'bad.json');
    const bad = order(1) as unknown as { is_food: unknown };
    bad.is_food = 'yes';
    writeFileSync(orderFile, JSON.stringify(bad));
    const invalid = await cli(['create', '--reference', newReference(), '--order', orderFile]);
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toMatch(/order\.is_food: Invalid input: expected boolean/);

    const unknown = await cli(['status', 'NO-SUCH-REF']);
    expect(unknown.code).toBe(3);
    expect(unknown.stderr).toMatch(/no delivery with reference NO-SUCH-REF/);

    const badKey = await cli(['check-key'], { ...stack.cliEnv, DELIVERY_API_KEY: 'wrong-key-123' });
    expect(badKey.code).toBe(4);
    expect(badKey.stderr).toMatch(/rejected the API key/);
    expect(badKey.stderr + badKey.stdout).not.toContain('wrong-key-123');

    const goodKey = await cli(['check-key']);
    expect(goodKey.code).toBe(0);
  });
});
