/**
 * The simulator's state file over real HTTP: a simulator closed and started again on the same
 * file answers for the same deliveries, orders and idempotency keys, keeps advancing them to
 * their end with signed webhooks, resends webhooks that were still being retried, saves on its
 * own without a close (what a SIGKILL leaves), and refuses a corrupt or foreign file by name.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Webhook } from 'standardwebhooks';
import { DeliveryRecordSchema, WebhookEventSchema, type DeliveryRecord, type WebhookEvent } from '../../provider/schemas';
import { generateWebhookSecret } from '../../provider/webhook-signature';
import { simulatorConfigFromEnv } from '../../simulator/config';
import { StateFileError, StateFileSchema, type StateFile } from '../../simulator/persistence';
import { createSimulator, type Simulator } from '../../simulator/server';
import { call, createBody, destination, sleep, startReceiver, startSimulator, type Receiver } from './simulator-fixtures';

const secret = generateWebhookSecret();
let dir: string;
let rx: Receiver;
let answer = 204;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sim-state-'));
  rx = await startReceiver(() => answer);
});
afterAll(async () => {
  await rx.close();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  rx.received.length = 0;
  answer = 204;
});

let files = 0;
const newFile = () => join(dir, `state-${++files}.json`);
const readState = (file: string): StateFile => StateFileSchema.parse(JSON.parse(readFileSync(file, 'utf8')));

function received(): WebhookEvent[] {
  const wh = new Webhook(secret);
  return rx.received.map((r) => {
    wh.verify(r.body, r.headers);
    return WebhookEventSchema.parse(JSON.parse(r.body));
  });
}

async function eventually<T>(what: string, fn: () => Promise<T | undefined> | T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

const getDelivery = async (url: string, id: string) => DeliveryRecordSchema.parse((await call(url, 'GET', `/v1/deliveries/${id}`)).json);

test('closed and started again on the same file: same deliveries, orders and keys, advancing to their end with webhooks', async () => {
  const file = newFile();
  const errors: string[] = [];
  const options = { stateFile: file, timeScale: 100, autoAdvanceMs: 25_000, webhook: { url: rx.url, secret }, onError: (m: string) => errors.push(m) }; // one step per 250 ms
  const a = await startSimulator(options);
  const body = createBody({ reference_number: 'KEEP-1', destinations: [destination(), destination()] });
  const created = await call(a.url, 'POST', '/v1/deliveries', { body, headers: { 'idempotency-key': 'keep-1' } });
  expect(created.status).toBe(201);
  const first = DeliveryRecordSchema.parse(created.json);
  const second = DeliveryRecordSchema.parse((await call(a.url, 'POST', '/v1/deliveries', { body: createBody() })).json);
  const orderBefore = (await call(a.url, 'GET', `/v1/orders?delivery_id=${first.id}`)).json as { data: { id: string }[] };

  // Mid-delivery: a step or two taken and their webhooks received, the end still ahead.
  await eventually('a first step', async () => ((await getDelivery(a.url, first.id)).status === 'ASSIGNED' ? true : undefined));
  await eventually('its webhooks', () => (received().some((e) => e.data.delivery_id === second.id) ? true : undefined));
  const requestsBefore = a.sim.requestLog().length;
  await a.sim.close();
  const atClose = new Map(a.sim.deliveries().map((d) => [d.delivery.id, d.delivery]));
  expect([...atClose.values()].every((d) => d.status !== 'DELIVERED')).toBe(true);
  expect(statSync(file).mode & 0o777).toBe(0o600); // personal data and the webhook secret
  const saved = readState(file);
  expect(saved.deliveries.map((d) => d.delivery.id)).toEqual([first.id, second.id]);
  expect(saved.deliveries.every((d) => d.auto_advance_at !== null)).toBe(true);
  const before = received();

  // The new simulator holds exactly what the old one had when it stopped, before it moves on.
  const bErrors: string[] = [];
  const b = createSimulator({ ...options, onError: (m) => bErrors.push(m) });
  expect(b.deliveries().map((d) => d.delivery)).toEqual([...atClose.values()]);
  const { url } = await b.listen(0, '127.0.0.1');
  try {
    expect((await call(url, 'GET', `/v1/orders?delivery_id=${first.id}`)).json).toEqual(orderBefore);
    const list = (await call(url, 'GET', '/v1/deliveries?reference_number=KEEP-1')).json as { data: DeliveryRecord[] };
    expect(list.data.map((d) => d.id)).toEqual([first.id]);
    // The idempotency key still answers with the first delivery, and still refuses another body.
    const replay = await call(url, 'POST', '/v1/deliveries', { body, headers: { 'idempotency-key': 'keep-1' } });
    expect(replay.status).toBe(200);
    expect(DeliveryRecordSchema.parse(replay.json).id).toBe(first.id);
    expect((await call(url, 'POST', '/v1/deliveries', { body: createBody(), headers: { 'idempotency-key': 'keep-1' } })).status).toBe(409);
    // Request log indexes count on.
    expect(b.requestLog()[0]?.index).toBe(requestsBefore);

    for (const id of [first.id, second.id]) {
      await eventually(`${id} to be delivered`, async () => ((await getDelivery(url, id)).status === 'DELIVERED' ? true : undefined));
    }
    await b.webhooksIdle();
    const events = received();
    // Every status change of the whole lifecycle reached the receiver, signed, before or after the restart.
    const statuses = (id: string, dst?: string) => [...new Set(events.filter((e) => e.data.delivery_id === id && ('destination_id' in e.data ? e.data.destination_id : undefined) === dst).map((e) => e.data.status))];
    for (const id of [first.id, second.id]) expect(statuses(id)).toEqual(['ASSIGNED', 'UPCOMING', 'PICKED_UP', 'DELIVERED']);
    for (const dst of first.destinations) expect(statuses(first.id, dst.id)).toEqual(['IN_TRANSIT', 'DELIVERED']);
    expect(events.length).toBeGreaterThan(before.length);
    const order = (await call(url, 'GET', `/v1/orders?delivery_id=${first.id}`)).json as { data: { status: string }[] };
    expect(order.data[0]?.status).toBe('INVOICED');

    // A reset empties the file too.
    await call(url, 'POST', '/_sim/reset', { key: null });
    await b.saveState();
    expect(readState(file).deliveries).toEqual([]);
  } finally {
    await b.close();
  }
  expect(errors).toEqual([]);
  expect(bErrors).toEqual([]);
});

test('webhooks still being retried at close are sent again after the restart, with the same event ids', async () => {
  const file = newFile();
  answer = 503;
  const options = { stateFile: file, timeScale: 100, webhook: { url: rx.url, secret } }; // retries after 50 ms, 300 ms, 1.2 s, ...
  const a = await startSimulator(options);
  const d = DeliveryRecordSchema.parse((await call(a.url, 'POST', '/v1/deliveries', { body: createBody() })).json);
  a.sim.advance(d.id);
  a.sim.advance(d.id);
  await eventually('failed attempts', () => (a.sim.webhookEvents().every((e) => e.state === 'retrying' && e.attempts >= 2) ? true : undefined));
  await a.sim.close();
  const pending = readState(file).webhook_events;
  expect(pending.map((e) => [e.status, e.state])).toEqual([
    ['ASSIGNED', 'retrying'],
    ['UPCOMING', 'retrying'],
  ]);
  expect(pending.every((e) => e.next_attempt_at !== null)).toBe(true);
  const ids = pending.map((e) => e.event_id);

  answer = 204;
  rx.received.length = 0;
  const b = await startSimulator(options);
  try {
    await b.sim.webhooksIdle(10_000);
    // Each exactly once. In no set order: a retry goes when its own backoff is due (the contract orders no retries).
    expect(received().map((e) => e.id).sort()).toEqual([...ids].sort());
    expect(b.sim.webhookEvents().map((e) => [e.event_id, e.state])).toEqual(ids.map((id) => [id, 'delivered']));
    expect(b.sim.webhookEvents().every((e) => e.attempts >= 3)).toBe(true); // the attempt count carried on
    expect(b.errors).toEqual([]);
  } finally {
    await b.sim.close();
  }
});

test('saved on its own while running, so a killed simulator loses at most about a second', async () => {
  const file = newFile();
  const a = await startSimulator({ stateFile: file });
  try {
    const d = DeliveryRecordSchema.parse((await call(a.url, 'POST', '/v1/deliveries', { body: createBody() })).json);
    a.sim.advance(d.id);
    const started = Date.now();
    await eventually('the periodic save', () => {
      try {
        return readState(file).deliveries.some((x) => x.delivery.id === d.id && x.delivery.status === 'ASSIGNED') ? true : undefined;
      } catch {
        return undefined;
      }
    });
    expect(Date.now() - started).toBeLessThan(2_500);
    // What a SIGKILL would leave: the file as it is now, without the close-time save.
    const copy = `${file}.copy`;
    copyFileSync(file, copy);
    const b = createSimulator({ stateFile: copy });
    expect(b.deliveries().map((x) => [x.delivery.id, x.delivery.status])).toEqual([[d.id, 'ASSIGNED']]);
    await b.close();
  } finally {
    await a.sim.close();
  }
});

describe('a file it cannot use stops the start, naming the file and the problem', () => {
  let good: string;
  beforeAll(async () => {
    good = newFile();
    const a = await startSimulator({ stateFile: good });
    await call(a.url, 'POST', '/v1/deliveries', { body: createBody() });
    await a.sim.close();
  });

  const corrupt = (text: string) => {
    const file = newFile();
    writeFileSync(file, text);
    return file;
  };
  const edited = (edit: (s: Record<string, unknown> & StateFile) => void) => {
    const s = JSON.parse(readFileSync(good, 'utf8')) as Record<string, unknown> & StateFile;
    edit(s);
    return corrupt(JSON.stringify(s));
  };
  const startError = (file: string): Error => {
    let sim: Simulator | undefined;
    try {
      sim = createSimulator({ stateFile: file });
    } catch (e) {
      return e as Error;
    }
    void sim.close();
    throw new Error('the simulator started');
  };

  test.each([
    ['truncated JSON', () => corrupt(readFileSync(good, 'utf8').slice(0, 100)), /is not valid JSON/],
    ['an empty file', () => corrupt(''), /is empty/],
    ['another JSON document', () => corrupt('{"deliveries": []}'), /is not a simulator state file/],
    ['a newer format version', () => edited((s) => (s.version = 2 as 1)), /has format version 2, which this simulator cannot read \(it reads version 1\)/],
    ['a broken record', () => edited((s) => (s.deliveries[0]!.delivery.price.amount = -1)), /is not valid: deliveries\[0\]\.delivery\.price\.amount: /],
    ['a missing section', () => edited((s) => delete (s as Partial<StateFile>).idempotency), /is not valid: idempotency: /],
    ['an order of another delivery', () => edited((s) => (s.deliveries[0]!.order.delivery_id = 'del_other')), /deliveries\[0\]\.order\.delivery_id: does not match/],
  ])('%s', (_what, make, message) => {
    const file = make();
    const text = readFileSync(file, 'utf8');
    const e = startError(file);
    expect(e).toBeInstanceOf(StateFileError);
    expect(e.message).toContain(`simulator state file ${file} `);
    expect(e.message).toMatch(message);
    expect(readFileSync(file, 'utf8')).toBe(text); // left as it was
  });

  test('a missing file is a first start (and a killed writer\'s temporary file is cleaned up)', async () => {
    const file = newFile();
    const stale = `${file}.12345-0badc0de.tmp`;
    writeFileSync(stale, '{"half": ');
    const sim = createSimulator({ stateFile: file });
    expect(sim.deliveries()).toEqual([]);
    expect(existsSync(stale)).toBe(false);
    await sim.close();
    expect(readState(file).deliveries).toEqual([]);
  });

  test('`npm run simulator` with SIMULATOR_STATE_FILE refuses it and exits with the message', async () => {
    expect(simulatorConfigFromEnv({ SIMULATOR_STATE_FILE: good }).options.stateFile).toBe(good);
    const file = corrupt('{ not json');
    const run = await promisify(execFile)(process.execPath, ['--import', 'tsx', join(__dirname, '../../simulator/main.ts')], {
      env: { ...process.env, SIMULATOR_PORT: '0', SIMULATOR_STATE_FILE: file },
      timeout: 30_000,
    }).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => e,
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`simulator state file ${file} is not valid JSON`);
  }, 40_000);
});
