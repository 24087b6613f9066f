/**
 * References that cannot poison the pipeline, end to end with everything real (client library
 * and CLI → Temporal dev server → workers → simulator → signed webhooks → bridge): Unicode
 * references are created once and found by reference; a reference with a control character is
 * refused by the client library and the CLI before anything starts.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { InvalidInputError } from '../../client/delivery-client';
import { idempotencyKeyHeader } from '../../provider/idempotency';
import { deliveryRequest } from '../fixtures/orders';
import { createdDelivery, driveToDelivered, eventually, startStack, type Stack } from '../helpers/stack';

const run = promisify(execFile);
const CLI = join(__dirname, '../../client/delivery.js');
let stack: Stack;
let dir: string;

beforeAll(async () => {
  stack = await startStack();
  dir = mkdtempSync(join(tmpdir(), 'delivery-references-'));
});
afterAll(() => stack.stop());

function order(destinations = 1) {
  const { reference_number: _r, ...o } = deliveryRequest({ is_food: false }, destinations);
  return o;
}
const cli = (args: string[], env: NodeJS.ProcessEnv = stack.cliEnv) =>
  run(process.execPath, [CLI, ...args], { env, timeout: 60_000 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
/** Every message down a failure's cause chain. */
function failureMessages(err: unknown): string[] {
  const out: string[] = [];
  for (let e = err as { message?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e) out.push(String(e.message));
  return out;
}
const atProvider = (reference: string) => stack.sim.deliveries().filter((d) => d.delivery.reference_number === reference);

describe('a Unicode reference', () => {
  it.each(['ORD-€42', '注文-1001'])('%s is created once end to end, found by reference, and followed to DELIVERED', async (reference) => {
    const started = await stack.deliveries.startDelivery(order(2), { reference });
    // The workflow ID is still delivery:<reference>, Unicode and all.
    expect(started).toEqual({ reference, account: 'default', workflowId: `delivery:${reference}`, alreadyStarted: false, checked: true });

    const created = await createdDelivery(stack, reference);
    expect(created.reference).toBe(reference);
    const mine = atProvider(reference);
    expect(mine).toHaveLength(1);
    expect(created.deliveryId).toBe(mine[0]!.delivery.id);
    // The provider got the derived, header-safe Idempotency-Key of the workflow ID.
    const keys = stack.sim.context.store.idempotencyEntries(Date.now()).map((e) => e.key);
    expect(keys).toContain(idempotencyKeyHeader(`delivery:${reference}`));

    // Found by reference: the client's status, its list, and a visibility query on the search attribute.
    expect((await stack.deliveries.getStatus(reference)).deliveryId).toBe(created.deliveryId);
    const listed = await eventually('the list to show it', async () => (await stack.deliveries.list({ limit: 200 })).find((r) => r.reference === reference));
    expect(listed).toMatchObject({ workflowId: `delivery:${reference}`, workflowStatus: 'RUNNING' });
    await eventually('visibility by OrderReference', async () => {
      for await (const wf of stack.temporal.workflow.list({ query: `OrderReference = '${reference}'` })) if (wf.workflowId === `delivery:${reference}`) return true;
      return undefined;
    });
    const status = await cli(['status', reference, '--json']);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ reference, deliveryId: created.deliveryId });

    // Webhooks reach it through the bridge (which learns the reference from the provider).
    driveToDelivered(stack.sim, created.deliveryId!);
    const result = await stack.deliveries.result(reference);
    expect(result.status).toBe('DELIVERED');
    expect(atProvider(reference)).toHaveLength(1);
  });

  it('is created from the CLI and shown by `list`', async () => {
    const reference = '📦-Müller-7';
    const orderFile = join(dir, 'order.json');
    writeFileSync(orderFile, JSON.stringify(order(1)));
    const created = await cli(['create', '--reference', reference, '--order', orderFile, '--json', '--check-timeout', '60']);
    expect(created.code).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ reference, workflowId: `delivery:${reference}`, alreadyStarted: false });
    await createdDelivery(stack, reference);
    expect(atProvider(reference)).toHaveLength(1);
    await eventually('`delivery list` to show it', async () => {
      const listed = await cli(['list', '--limit', '200']);
      return listed.code === 0 && listed.stdout.split('\n').some((l) => l.startsWith(`${reference} `)) ? true : undefined;
    });
    await stack.temporal.workflow.getHandle(`delivery:${reference}`).terminate('test done');
  });
});

describe('a Unicode reference after an unclear creation', () => {
  it('is looked up by reference before creating again: one delivery, found through the percent-encoded query', async () => {
    const reference = '注文-1001-再';
    // Held at the price guard, so the slow answer below hits the creation and nothing else.
    await stack.deliveries.startDelivery(order(1), { reference, maxPrice: { amount: 1, currency: 'EUR' } });
    await eventually('the quote to wait for approval', async () => ((await stack.deliveries.getStatus(reference)).phase === 'awaiting_approval' ? true : undefined));
    const since = (stack.sim.requestLog().at(-1)?.index ?? -1) + 1;
    // The provider creates the delivery but answers after the worker's 5 s timeout: an unclear outcome.
    stack.sim.setFaults({ latency_ms: 7_000 });
    try {
      await stack.deliveries.approveQuote(reference);
      await eventually('the creation to reach the provider', () => (atProvider(reference).length > 0 ? true : undefined));
    } finally {
      stack.sim.setFaults({ latency_ms: 0 });
    }
    const created = await createdDelivery(stack, reference);
    expect(atProvider(reference)).toHaveLength(1);
    expect(created.deliveryId).toBe(atProvider(reference)[0]!.delivery.id);
    const lookups = stack.sim.requestLog(since).filter((r) => r.method === 'GET' && r.path === '/v1/deliveries');
    expect(lookups.map((r) => new URLSearchParams(r.query).get('reference_number'))).toContain(reference);
    // The slow first answer is logged once written: let it land here, not in a later test's window.
    await eventually('the slow creation to be logged', () => (stack.sim.requestLog(since).some((r) => r.method === 'POST' && r.duration_ms >= 7_000) ? true : undefined));
    await stack.temporal.workflow.getHandle(`delivery:${reference}`).terminate('test done');
  }, 90_000);
});

describe('a reference with a newline', () => {
  const reference = 'ORD-1\n2';
  const nothingStarted = async (since: number) => {
    await expect(stack.temporal.workflow.getHandle(`delivery:${reference}`).describe()).rejects.toThrow(WorkflowNotFoundError);
    expect(atProvider(reference)).toEqual([]);
    // No call of any kind for it: no quote, no creation, no look-up by reference.
    const calls = stack.sim.requestLog(since).filter((r) => r.method === 'POST' || new URLSearchParams(r.query).get('reference_number') === reference);
    expect(calls).toEqual([]);
  };

  it('is refused by the client library before anything starts, naming the field and the character', async () => {
    const since = (stack.sim.requestLog().at(-1)?.index ?? -1) + 1;
    const err = await stack.deliveries.startDelivery(order(1), { reference }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidInputError);
    expect((err as InvalidInputError).issues).toEqual([{ field: 'reference', message: 'must not contain a control character (U+000A at position 5)' }]);
    for (const call of [() => stack.deliveries.getStatus(reference), () => stack.deliveries.cancelDelivery(reference)]) {
      await expect(call()).rejects.toThrow(/invalid reference: reference: must not contain a control character/);
    }
    await nothingStarted(since);
  });

  it('started by another Temporal client, bypassing the library: the delivery fails at once, naming the field, without a provider call', async () => {
    const raw = 'ORD-raw\n1';
    const since = (stack.sim.requestLog().at(-1)?.index ?? -1) + 1;
    const handle = await stack.temporal.workflow.start('delivery', { taskQueue: stack.workers.taskQueue, workflowId: `delivery:${raw}`, args: [{ reference: raw, order: order(1) }] });
    const err = await handle.result().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    // Not retried: one failure, a message that names the field and the character.
    expect(JSON.stringify(failureMessages(err))).toMatch(/reference(_number)?: must not contain a control character \(U\+000A at position 7\)/);
    expect(stack.sim.requestLog(since).filter((r) => r.method === 'POST' || new URLSearchParams(r.query).get('reference_number') === raw)).toEqual([]);
  });

  it('is refused by the CLI with exit code 2, naming the field, even with Temporal out of reach', async () => {
    const since = (stack.sim.requestLog().at(-1)?.index ?? -1) + 1;
    const orderFile = join(dir, 'newline-order.json');
    writeFileSync(orderFile, JSON.stringify(order(1)));
    const refused = await cli(['create', '--reference', reference, '--order', orderFile]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('invalid reference: reference: must not contain a control character (U+000A at position 5)');
    const json = await cli(['create', '--reference', reference, '--order', orderFile, '--json']);
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stderr).error.details).toEqual([{ field: 'reference', message: 'must not contain a control character (U+000A at position 5)' }]);
    // Bad input is bad input whether Temporal is up or not: checked before connecting.
    const offline = await cli(['cancel', reference], { ...stack.cliEnv, TEMPORAL_ADDRESS: '127.0.0.1:1' });
    expect(offline.code).toBe(2);
    expect(offline.stderr).toMatch(/invalid reference: reference: must not contain a control character/);
    await nothingStarted(since);
  });
});
