/**
 * Issue 53, "refused before it starts": a start or a quote for an account the workers' registry
 * does not have (never had, or no longer has after a reload) is refused to its caller within the
 * call, with a typed error naming the account and the field, and leaves no delivery open; the CLI
 * exits 2; a start by name with plain JSON fails at once, never retried. Everything real: the
 * registry file, the dev server, the workers, the simulator and the `delivery` command.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { DeliveryRefusedError } from '../../client/delivery-client';
import { deliveryWorkflowId } from '../../contract/workflow-ids';
import { applicationFailureIn } from '../../contract/failure-cause';
import { UNKNOWN_ACCOUNT, WORKFLOW_FAILURE_TYPES } from '../../contract/failures';
import { keyFingerprint } from '../../simulator/auth';
import { createSimulator, type Simulator } from '../../simulator/server';
import { deliveryOrder, deliveryRequest } from '../fixtures/orders';
import { eventually } from '../helpers/stack';
import { registryFolder, startAccountStack, type AccountStack, type RegistryFolder } from '../helpers/account-stack';

jest.setTimeout(120_000);

const run = promisify(execFile);
const CLI = join(__dirname, '../../client/delivery.js');
const KEYS = { 'shop-a': 'key-shop-a', 'shop-b': 'key-shop-b' } as const;
type Shop = keyof typeof KEYS;

let sim: Simulator;
let dir: string;
let stack: AccountStack;
let seq = 0;
const ref = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${++seq}`;

let folder: RegistryFolder;
const writeRegistry = (shops: Shop[]) => folder.write(shops);

beforeAll(async () => {
  sim = createSimulator({ apiKeys: Object.values(KEYS), onError: (m) => console.error(`simulator: ${m}`) });
  await sim.listen(0, '127.0.0.1');
  folder = registryFolder('delivery-refusals-', KEYS, () => ({ baseUrl: sim.url }));
  dir = folder.dir;
  writeRegistry(['shop-a', 'shop-b']);
  stack = await startAccountStack(folder.file, 'refusals');
});

afterAll(async () => {
  await stack.stop();
  await sim.close();
});

const order = () => deliveryOrder({ is_food: false });

/** The workflow's status, `absent` when there is none: never RUNNING for a refused start. */
async function workflowStatus(workflowId: string): Promise<string> {
  stack.started.push(workflowId);
  return stack.temporal.workflow
    .getHandle(workflowId)
    .describe()
    .then(
      (d) => d.status.name,
      () => 'absent',
    );
}

/** The CLI on the stack's task queue, payloads unencrypted as the workers' (TEMPORAL_ADDRESS: the run's dev server). */
function cliEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const { DELIVERY_PAYLOAD_KEYS: _k, DELIVERY_PAYLOAD_KEYS_FILE: _f, DELIVERY_ACCOUNT: _a, ...env } = process.env;
  return { ...env, DELIVERY_TASK_QUEUE: stack.workers.taskQueue, ...extra };
}
const cli = (args: string[], env: NodeJS.ProcessEnv) =>
  run(process.execPath, [CLI, ...args], { env, timeout: 60_000 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );

test('startDelivery for an unknown account throws DeliveryRefusedError naming the account and the field; no delivery is left open, nothing reaches the courier', async () => {
  const reference = ref('NOBODY');
  const callsBefore = sim.requestLog().length;
  const err = await stack.deliveries.startDelivery(order(), { reference, account: 'nobody' }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(DeliveryRefusedError);
  const refused = err as DeliveryRefusedError;
  expect(refused.account).toBe('nobody');
  expect(refused.issues).toEqual([{ field: 'account', message: expect.stringContaining('no courier account nobody') }]);
  expect(refused.message).toMatch(/account nobody: account: no courier account nobody/);
  expect(await workflowStatus(deliveryWorkflowId(reference, 'nobody'))).toBe('FAILED');
  expect(sim.requestLog().length).toBe(callsBefore);
});

test('a known account starts as before, its start checked by a worker', async () => {
  const reference = ref('KNOWN');
  const started = await stack.deliveries.startDelivery(order(), { reference, account: 'shop-a' });
  stack.started.push(started.workflowId);
  expect(started).toMatchObject({ account: 'shop-a', alreadyStarted: false, checked: true });
  expect(await stack.deliveries.startDelivery(order(), { reference, account: 'shop-a' })).toMatchObject({ alreadyStarted: true });
  await eventually('created under shop-a', () => sim.deliveries().find((d) => d.delivery.reference_number === reference && d.key_fingerprint === keyFingerprint(KEYS['shop-a'])));
});

test('`delivery create --account nobody` and DELIVERY_ACCOUNT=nobody exit 2 naming the account, with no delivery open; --account and DELIVERY_ACCOUNT address a known account', async () => {
  const file = join(dir, 'order.json');
  writeFileSync(file, JSON.stringify(order()));
  const byFlag = ref('CLI-FLAG');
  const flag = await cli(['create', '--reference', byFlag, '--order', file, '--account', 'nobody'], cliEnv());
  expect(flag).toMatchObject({ code: 2, stdout: '' });
  expect(flag.stderr).toMatch(/account nobody: account: no courier account nobody/);
  expect(await workflowStatus(deliveryWorkflowId(byFlag, 'nobody'))).toBe('FAILED');

  const byEnv = ref('CLI-ENV');
  const env = await cli(['create', '--reference', byEnv, '--order', file, '--json'], cliEnv({ DELIVERY_ACCOUNT: 'nobody' }));
  expect(env.code).toBe(2);
  expect(JSON.parse(env.stderr).error).toMatchObject({ code: 2, details: [{ field: 'account' }] });
  expect(await workflowStatus(deliveryWorkflowId(byEnv, 'nobody'))).toBe('FAILED');

  // A known account: started by --account, found by DELIVERY_ACCOUNT.
  const known = ref('CLI-KNOWN');
  const created = await cli(['create', '--reference', known, '--order', file, '--account', 'shop-b', '--check-timeout', '60'], cliEnv());
  expect(created).toMatchObject({ code: 0, stdout: expect.stringContaining(`started ${deliveryWorkflowId(known, 'shop-b')}`) });
  stack.started.push(deliveryWorkflowId(known, 'shop-b'));
  expect(await cli(['status', known, '--json'], cliEnv({ DELIVERY_ACCOUNT: 'shop-b' }))).toMatchObject({ code: 0, stdout: expect.stringContaining(`"reference": "${known}"`) });
  // Four CLI processes, each loading the CLI's TypeScript through tsx: about 20 s each on a busy 2-core machine.
}, 300_000);

test('`delivery create` that no worker checks within --check-timeout exits 6, started, never 0', async () => {
  const file = join(dir, 'order-unchecked.json');
  writeFileSync(file, JSON.stringify(order()));
  const reference = ref('CLI-UNCHECKED');
  const queue = `${stack.workers.taskQueue}-no-worker`; // no worker polls it
  const workflowId = deliveryWorkflowId(reference, 'shop-a');
  stack.started.push(workflowId);
  const unchecked = await cli(['create', '--reference', reference, '--order', file, '--account', 'shop-a', '--check-timeout', '1'], cliEnv({ DELIVERY_TASK_QUEUE: queue }));
  expect(unchecked).toMatchObject({ code: 6, stdout: expect.stringContaining(`started ${workflowId} (no worker checked it within 1 s`) });
  expect(await workflowStatus(workflowId)).toBe('RUNNING'); // started: a worker that comes checks it
  // Asked again, it exists: nothing new is started, and that is done.
  expect(await cli(['create', '--reference', reference, '--order', file, '--account', 'shop-a'], cliEnv({ DELIVERY_TASK_QUEUE: queue }))).toMatchObject({ code: 0, stdout: expect.stringContaining('exists already') });
}, 180_000);

test('a start by name with plain JSON for an unknown account fails at once, never retried', async () => {
  const reference = ref('JSON');
  const workflowId = deliveryWorkflowId(reference, 'nobody');
  stack.started.push(workflowId);
  // As a Go or Java order system would: the type by name, the input as plain JSON.
  const handle = await stack.temporal.workflow.start('delivery', { taskQueue: stack.workers.taskQueue, workflowId, args: [JSON.parse(JSON.stringify({ reference, account: 'nobody', order: order() }))] });
  const err = await handle.result().catch((e: unknown) => e);
  expect(err).toBeInstanceOf(WorkflowFailedError);
  const failure = (err as WorkflowFailedError).cause as ApplicationFailure;
  expect(failure).toMatchObject({ type: WORKFLOW_FAILURE_TYPES.invalidInput, nonRetryable: true });
  expect(failure.message).toContain('account: no courier account nobody');
  expect(failure.details?.[0]).toEqual([expect.objectContaining({ field: 'account' })]);
});

test('a quote for an unknown account is refused at once (it was retried for ever), by the client and by name', async () => {
  const err = await stack.deliveries.quote(order(), { account: 'nobody' }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(DeliveryRefusedError);
  expect((err as DeliveryRefusedError).message).toMatch(/quote for account nobody: account: no courier account nobody/);

  const workflowId = `quote:refusals-${ref('Q')}`;
  const handle = await stack.temporal.workflow.start('quoteOnly', { taskQueue: stack.workers.taskQueue, workflowId, args: [deliveryRequest({ is_food: false }), { account: 'nobody' }] });
  stack.started.push(workflowId);
  const failed = await handle.result().catch((e: unknown) => e);
  expect(failed).toBeInstanceOf(WorkflowFailedError);
  expect(applicationFailureIn((failed as WorkflowFailedError).cause)).toMatchObject({ type: UNKNOWN_ACCOUNT, nonRetryable: true, message: expect.stringContaining('no courier account nobody') });
});

test('an account removed from the registry file is refused the same way, its start and its quote', async () => {
  writeRegistry(['shop-a']);
  await eventually('shop-b removed', () => (stack.registry.get('shop-b') ? undefined : true));
  const reference = ref('REMOVED');
  const err = await stack.deliveries.startDelivery(order(), { reference, account: 'shop-b' }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(DeliveryRefusedError);
  expect((err as DeliveryRefusedError).message).toMatch(/account shop-b: account: no courier account shop-b/);
  expect(await workflowStatus(deliveryWorkflowId(reference, 'shop-b'))).toBe('FAILED');
  await expect(stack.deliveries.quote(order(), { account: 'shop-b' })).rejects.toThrow(DeliveryRefusedError);
  writeRegistry(['shop-a', 'shop-b']);
  await eventually('shop-b back', () => stack.registry.get('shop-b'));
  // Refused, its reference is not spent: the same start once the account is back goes through.
  const again = await stack.deliveries.startDelivery(order(), { reference, account: 'shop-b' });
  expect(again).toMatchObject({ account: 'shop-b', alreadyStarted: false, checked: true });
  await eventually('created under shop-b', () => sim.deliveries().find((d) => d.delivery.reference_number === reference && d.key_fingerprint === keyFingerprint(KEYS['shop-b'])));
  // A delivery that did start keeps its reference for good.
  expect(await stack.deliveries.startDelivery(order(), { reference, account: 'shop-b' })).toMatchObject({ alreadyStarted: true });
});

test("`delivery check-key --account` checks that account's key as the worker reads it: its registry entry and key file", async () => {
  writeFileSync(join(dir, 'revoked.key'), 'key-no-longer-valid');
  const file = join(dir, 'keys.json');
  const accounts = [
    { id: 'good', baseUrl: sim.url, apiKey: { file: 'shop-a.key' } },
    { id: 'revoked', baseUrl: sim.url, apiKey: { file: 'revoked.key' } },
  ];
  writeFileSync(file, JSON.stringify({ accounts }));
  const env = cliEnv({ DELIVERY_ACCOUNTS_FILE: file, DELIVERY_API_KEY: 'key-shop-b' });
  const good = await cli(['check-key', '--account', 'good'], env);
  expect(good).toMatchObject({ code: 0, stdout: expect.stringContaining(`the API key of account good (${file}) is valid for ${sim.url}`) });
  const revoked = await cli(['check-key', '--account', 'revoked'], env);
  expect(revoked.code).toBe(4);
  expect(revoked.stderr).toContain(`the courier rejected the API key of account revoked (its apiKey in ${file})`);
  const unknown = await cli(['check-key'], { ...env, DELIVERY_ACCOUNT: 'nobody' });
  expect(unknown.code).toBe(2);
  expect(unknown.stderr).toContain(`account: no courier account nobody in the registry ${file}`);
}, 300_000);
