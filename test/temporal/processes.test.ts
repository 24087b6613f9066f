/**
 * The real processes (`npm run simulator`, `npm run worker`, `npm run bridge` and the CLI), as an
 * operator runs them, against the test's Temporal dev server: a delivery goes end to end, a bad
 * key pauses its account (in the pacing gate, and in the calls outside it: task-queue pacing),
 * counted once in `delivery_account_unauthorized`, a forged webhook is refused, the worker
 * exports Prometheus metrics, its log is JSON lines (the SDK core's warnings too), and no API key,
 * webhook secret or payload key ever reaches a log line.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { generatePayloadKey } from '../../temporal/payload-codec';
import { generateWebhookSecret } from '../../provider/webhook-signature';
import { freePort } from '../../scripts/temporal-dev-server';
import { deliveryRequest } from '../fixtures/orders';
import { ENTRY, ProcessGroup, removeWorkflowBundleFile, ROOT, workflowBundleFile } from '../../scripts/processes';
import { parsePrometheusText } from '../helpers/prometheus';
import { testClient, testDeployment, testServerAddress } from '../helpers/temporal';
import { eventually } from '../helpers/stack';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { OTHER_ACCOUNTS } from '../../metrics/account';

const run = promisify(execFile);
const API_KEY = 'sk_test_SuperSecretCourierKey_7f3a9c';
const WRONG_KEY = 'sk_test_RevokedCourierKey_0b1d2e';
const WEBHOOK_SECRET = generateWebhookSecret();
const PAYLOAD_KEYS = generatePayloadKey('proc');
const SECRETS = [API_KEY, WRONG_KEY, WEBHOOK_SECRET, WEBHOOK_SECRET.slice('whsec_'.length), PAYLOAD_KEYS, PAYLOAD_KEYS.split(':')[1]!];

const processes = new ProcessGroup();

/** Waits for the ready line as long as beforeAll lets it: four processes starting at once on a shared machine may take over a minute. */
async function start(name: string, entry: string, env: NodeJS.ProcessEnv, ready: RegExp): Promise<void> {
  await processes.start({ name, entry, env, ready, startTimeoutMs: 0 });
}

let env: Record<string, string>;
let cliEnv: NodeJS.ProcessEnv;
let metricsAddress: string;
/** The Temporal runtime's metrics of the two workers with the revoked key: paced by the gate, and by task queue (every call outside the gate). */
const revokedMetrics = { gate: '', 'task-queue': '' };
let bridgeUrl: string;
let bridgeAdminUrl: string;

beforeAll(async () => {
  const { address, namespace } = testServerAddress();
  const [simPort, bridgePort, metricsPort, bridgeAdminPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  for (const pacing of ['gate', 'task-queue'] as const) revokedMetrics[pacing] = `127.0.0.1:${await freePort()}`;
  const simUrl = `http://127.0.0.1:${simPort}`;
  bridgeUrl = `http://127.0.0.1:${bridgePort}`;
  bridgeAdminUrl = `http://127.0.0.1:${bridgeAdminPort}`;
  metricsAddress = `127.0.0.1:${metricsPort}`;
  const taskQueue = `proc-${Date.now().toString(36)}`;
  env = {
    TEMPORAL_ADDRESS: address,
    TEMPORAL_NAMESPACE: namespace,
    DELIVERY_TASK_QUEUE: taskQueue,
    ...testDeployment(taskQueue),
    DELIVERY_API_URL: simUrl,
    DELIVERY_API_KEY: API_KEY,
    DELIVERY_PAYLOAD_KEYS: PAYLOAD_KEYS,
  };
  cliEnv = { ...process.env, ...env };
  await start(
    'simulator',
    ENTRY.simulator.entry,
    { SIMULATOR_PORT: String(simPort), SIMULATOR_API_KEYS: API_KEY, SIMULATOR_AUTO_ADVANCE_MS: '150', SIMULATOR_WEBHOOK_URL: `${bridgeUrl}/webhooks/delivery`, SIMULATOR_WEBHOOK_SECRET: WEBHOOK_SECRET },
    ENTRY.simulator.ready,
  );
  // The worker bundles its workflows as an operator's does; the revoked-key workers load a bundle made once (three bundling at once take minutes on a busy machine).
  const bundle = await workflowBundleFile();
  await Promise.all([
    start('worker', ENTRY.worker.entry, { ...env, LOG_LEVEL: 'DEBUG', WORKER_METRICS_ADDRESS: metricsAddress }, ENTRY.worker.ready),
    ...(['gate', 'task-queue'] as const).map((pacing) =>
      start(`worker-revoked-${pacing}`, ENTRY.worker.entry, { ...env, DELIVERY_TASK_QUEUE: `${taskQueue}-revoked-${pacing}`, DELIVERY_API_KEY: WRONG_KEY, DELIVERY_METRICS_ACCOUNTS: '0', PROVIDER_PACING: pacing, WORKER_METRICS_ADDRESS: revokedMetrics[pacing], WORKER_WORKFLOW_BUNDLE: bundle, LOG_LEVEL: 'DEBUG' }, ENTRY.worker.ready),
    ),
    start('bridge', ENTRY.bridge.entry, { ...env, BRIDGE_PORT: String(bridgePort), BRIDGE_ADMIN_PORT: String(bridgeAdminPort), DELIVERY_WEBHOOK_SECRETS: WEBHOOK_SECRET }, ENTRY.bridge.ready),
  ]);
}, 240_000);

afterAll(async () => {
  await processes.stopAll();
  await removeWorkflowBundleFile();
});

const cli = (args: string[], extra: NodeJS.ProcessEnv = {}) =>
  run(process.execPath, [join(ROOT, 'client/delivery.js'), ...args], { env: { ...cliEnv, ...extra }, timeout: 90_000 }).then(
    (r) => ({ code: 0, ...r }),
    (e: { code: number; stdout: string; stderr: string }) => e,
  );

it('run a delivery end to end, pause the account of a revoked key cleanly, refuse a forged webhook, export metrics, and log no secret', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'proc-'));
  const orderFile = join(dir, 'order.json');
  const { reference_number: _r, ...order } = deliveryRequest({ is_food: true }, 2);
  writeFileSync(orderFile, JSON.stringify(order));

  const reference = `PROC-${Date.now().toString(36)}`;
  const done = await cli(['create', '--reference', reference, '--order', orderFile, '--watch', '--json']);
  processes.log('cli', `${done.stdout}${done.stderr}`);
  expect(done.code).toBe(0);
  const final = JSON.parse(done.stdout.trim().split('\n').at(-1)!).final;
  expect(final.status).toBe('DELIVERED');
  expect(final.destinations.every((d: { trackingUrl: string }) => d.trackingUrl.startsWith('http'))).toBe(true);

  // A revoked key pauses the account, whichever way its calls are paced: its delivery waits (one
  // probe call per period, nothing failed), and the worker says so once, in a line and a count.
  for (const pacing of ['gate', 'task-queue'] as const) {
    const queue = { DELIVERY_TASK_QUEUE: `${env.DELIVERY_TASK_QUEUE}-revoked-${pacing}` };
    const revoked = await cli(['create', '--reference', `${reference}-R-${pacing}`, '--order', orderFile, '--check-timeout', '60'], queue);
    processes.log('cli', `${revoked.stdout}${revoked.stderr}`);
    const paused = () => processes.output.split('\n').filter((l) => l.startsWith(`[worker-revoked-${pacing}]`) && l.includes('courier account paused'));
    await eventually(`the ${pacing} worker to pause the account`, () => (paused().length > 0 ? true : undefined), 30_000);
    // Two probe periods later: still one line, one count, and the delivery waits.
    await new Promise((r) => setTimeout(r, 11_000));
    expect(paused()).toHaveLength(1);
    // Each probe's refusal and each held call is no warning of its own: the pause's line says it.
    const warned = processes.output.split('\n').filter((l) => l.startsWith(`[worker-revoked-${pacing}]`) && l.includes('"level":"WARN"') && l.includes('"msg":"Activity failed"'));
    expect(warned).toEqual([]);
    const counted = parsePrometheusText(await (await fetch(`http://${revokedMetrics[pacing]}/metrics`)).text());
    // These workers name no account in their labels (DELIVERY_METRICS_ACCOUNTS=0): the count is
    // `_other`'s on both paths, the gate's too, whose workflow cannot read the registry.
    expect(counted.sum('delivery_account_unauthorized', { account: OTHER_ACCOUNTS })).toBe(1);
    expect(counted.sum('delivery_account_unauthorized', { account: 'default' })).toBe(0);
    const result = await cli(['status', `${reference}-R-${pacing}`, '--json'], queue);
    processes.log('cli', `${result.stdout}${result.stderr}`);
    expect(JSON.parse(result.stdout)).toMatchObject({ phase: expect.not.stringMatching(/ended/) });
    expect(JSON.parse(result.stdout).deliveryId).toBeUndefined(); // nothing was created
  }

  const forged = await fetch(`${bridgeUrl}/webhooks/delivery`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'webhook-id': 'evt_forged', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': 'v1,AAAA' },
    body: JSON.stringify({ id: 'evt_forged', type: 'delivery.status_changed', created_at: new Date().toISOString(), data: { delivery_id: final.deliveryId, status: 'CANCELED' } }),
  });
  expect(forged.status).toBe(401);

  const metrics = await (await fetch(`http://${metricsAddress}/metrics`)).text();
  expect(metrics).toMatch(/^temporal_\w+/m);
  expect(metrics).toContain(`task_queue="${env.DELIVERY_TASK_QUEUE}`);
  expect((await fetch(`${bridgeUrl}/metrics`)).status).toBe(404); // only on the admin listener
  const bridgeMetrics = await (await fetch(`${bridgeAdminUrl}/metrics`)).text();
  expect(bridgeMetrics).toMatch(/bridge_webhooks_total\{outcome="accepted"[^}]*\} [1-9]/);

  // A workflow task the worker cannot run (a type it does not have): the SDK core's own warning goes to the log as a JSON line too.
  const { client, connection } = await testClient();
  try {
    const stray = await client.workflow.start('notADeliveryWorkflow', { taskQueue: env.DELIVERY_TASK_QUEUE!, workflowId: `stray-${reference}`, args: [] });
    await eventually('the worker to log the failed workflow task', () => (processes.output.includes('Failing workflow task') ? true : undefined), 30_000);
    await stray.terminate('test over');
  } finally {
    await connection.close();
  }

  await processes.stopAll();
  const everything = processes.output;
  const coreWarning = everything.split('\n').find((l) => l.startsWith('[worker] ') && l.includes('Failing workflow task'));
  expect(JSON.parse(coreWarning!.slice('[worker] '.length))).toMatchObject({ level: 'WARN', msg: expect.stringContaining('Failing workflow task') });
  expect(everything.includes('\u001b[')).toBe(false); // no console colour codes: every line is for a log pipeline
  // Structured logs: JSON lines that carry the workflow ID, from the worker and the bridge alike.
  const jsonLines = everything
    .split('\n')
    .map((l) => l.replace(/^\[[\w-]+\] /, ''))
    .flatMap((l) => {
      try {
        const v: unknown = JSON.parse(l);
        return v && typeof v === 'object' ? [v as Record<string, unknown>] : [];
      } catch {
        return []; // not a log line (the CLI's pretty JSON, webpack's notes, ...)
      }
    });
  // The creation call's log line: made by the pacing gate (the default) for this delivery, or by the delivery itself under task-queue pacing.
  expect(jsonLines.some((l) => l.deliveryWorkflowId === `delivery:${reference}` || (l.workflowId === `delivery:${reference}` && l.activityType === 'createDelivery'))).toBe(true);
  expect(jsonLines.some((l) => l.msg === 'webhook' && l.workflow_id === `delivery:${reference}`)).toBe(true);
  // The start line says the limits every account has, and how many accounts have their own.
  expect(everything).toMatch(/\[worker\] worker: .*pacing by gate \(creations 20\/60 s, quotes 100\/600 s, other 600\/60 s; 0 of 1 account\(s\) with limits of their own\)/);
  expect(everything).toContain('courier account paused'); // the revoked key's pause was logged...
  for (const secret of SECRETS) expect(everything.includes(secret) ? secret.slice(0, 12) + '…' : 'absent').toBe('absent'); // ...but no secret, anywhere
}, 180_000);
