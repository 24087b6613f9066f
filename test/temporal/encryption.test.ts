/**
 * Personal data encrypted in Temporal: the stored history holds no recipient name, phone or
 * address in clear, while the CLI (with the key) and the codec endpoint the Web UI calls still
 * show them.
 */
import { execFile, execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createCodecServer } from '../../temporal/codec-server';
import { AesGcmPayloadCodec, dataConverterFromEnv, generatePayloadKey, payloadCodecFromEnv } from '../../temporal/payload-codec';
import type { DeliveryState } from '../../contract/delivery-types';
import { deliveryRequest } from '../fixtures/orders';
import { deliverToTheEnd, startStack, type Stack } from '../helpers/stack';
import { testServerAddress } from '../helpers/temporal';

const run = promisify(execFile);
const keys = generatePayloadKey('test1');
const codec = payloadCodecFromEnv({ DELIVERY_PAYLOAD_KEYS: keys })!;
let stack: Stack;

beforeAll(async () => {
  // As the worker, bridge and CLI build it: the codec, and failure messages encoded.
  const dataConverter = dataConverterFromEnv({ DELIVERY_PAYLOAD_KEYS: keys })!;
  expect(dataConverter.payloadCodecs).toHaveLength(1);
  stack = await startStack({ dataConverter: { ...dataConverter, payloadCodecs: [codec] } });
});
afterAll(() => stack.stop());

interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
  /** Where in the history it is (added here, not part of the JSON). */
  path?: string;
}

/** Every payload anywhere in a history (inputs, results, signals, activity arguments, ...). */
function payloadsIn(node: unknown, path = '', out: JsonPayload[] = []): JsonPayload[] {
  if (Array.isArray(node)) node.forEach((n, i) => payloadsIn(n, `${path}/${i}`, out));
  else if (node && typeof node === 'object') {
    const o = node as Record<string, unknown>;
    if (o.metadata && typeof o.metadata === 'object' && 'encoding' in (o.metadata as object)) out.push({ ...(o as JsonPayload), path });
    else Object.entries(o).forEach(([k, v]) => payloadsIn(v, `${path}/${k}`, out));
  }
  return out;
}

function historyJson(workflowId: string): string {
  const { address, namespace } = testServerAddress();
  return execFileSync(process.env.TEMPORAL_CLI_PATH!, ['workflow', 'show', '--address', address, '--namespace', namespace, '--workflow-id', workflowId, '--output', 'json'], { encoding: 'utf8' });
}

it('stores no personal data in clear, yet the CLI and the codec endpoint show it', async () => {
  const reference = `ENC-${Date.now().toString(36)}`;
  const { reference_number: _r, ...order } = deliveryRequest({}, 2);
  order.destinations[0]!.location.last_name = 'Zwetschgenbaum';
  order.destinations[0]!.location.phone = '+4915199988877';
  order.destinations[1]!.location.address = 'Geheimweg 42, 12345 Nirgendwo';
  const s = await deliverToTheEnd(stack, reference, order);

  const stored = historyJson(`delivery:${reference}`);
  const payloads = payloadsIn(JSON.parse(stored));
  // Every payload's bytes, as the server stores them, decoded from the JSON's base64.
  const storedText = payloads.map((p) => Buffer.from(p.data ?? '', 'base64').toString('latin1')).join('\n');
  const secrets = ['Zwetschgenbaum', '+4915199988877', 'Geheimweg 42', order.pickup_location.address];
  for (const text of secrets) expect(storedText).not.toContain(text);
  // Only search attributes and Temporal's own markers stay plain: patch markers, and the
  // bookkeeping of local-activity markers (type, attempt, times; written by the SDK's core, not
  // the data converter; their results are encrypted). The server must read them; ours hold no
  // personal data by design. Everything else is ciphertext.
  const plain = payloads.filter((p) => Buffer.from(p.metadata?.encoding ?? '', 'base64').toString() !== 'binary/encrypted').map((p) => p.path!);
  expect(plain.filter((path) => !/\/searchAttributes\/indexedFields\/|\/patch-data\/|\/markerRecordedEventAttributes\/details\/data\//.test(path))).toEqual([]);
  expect(payloads.length - plain.length).toBeGreaterThan(10);
  // Control: the same bytes, decrypted with the key, do hold the order.
  const decrypted = await codec.decode(payloads.map((p) => ({ metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])), data: Buffer.from(p.data ?? '', 'base64') })));
  expect(decrypted.map((p) => Buffer.from(p.data ?? []).toString()).join('\n')).toContain('Zwetschgenbaum');

  // The CLI with the key reads the state (decrypted).
  const env = { ...stack.cliEnv, DELIVERY_PAYLOAD_KEYS: keys };
  const cli = await run(process.execPath, [join(__dirname, '../../client/delivery.js'), 'status', reference, '--json'], { env });
  const state = JSON.parse(cli.stdout) as DeliveryState;
  expect(state.status).toBe('DELIVERED');
  expect(state.destinations.map((d) => d.trackingUrl)).toEqual(s.destinations.map((d) => d.trackingUrl));

  // Without the key, it says what is missing instead of printing garbage.
  const noKey = await run(process.execPath, [join(__dirname, '../../client/delivery.js'), 'status', reference], { env: stack.cliEnv }).catch((e: { code: number; stderr: string }) => e);
  expect((noKey as { code: number }).code).not.toBe(0);
  expect((noKey as { stderr: string }).stderr).toContain('payload key "test1"');
  expect((noKey as { stderr: string }).stderr).not.toContain('Zwetschgenbaum');

  // The codec endpoint (what the Web UI calls) turns the stored input back into the order.
  const firstEvent = JSON.parse(stored).events[0];
  const input = firstEvent.workflowExecutionStartedEventAttributes.input.payloads;
  const server = createCodecServer({ codec, allowedOrigin: 'http://127.0.0.1:8233' });
  const url = await server.listen(0);
  try {
    const res = await fetch(`${url}/decode`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-namespace': 'default', origin: 'http://127.0.0.1:8233' }, body: JSON.stringify({ payloads: input }) });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('http://127.0.0.1:8233');
    const decoded = (await res.json()) as { payloads: { data: string }[] };
    const plain = Buffer.from(decoded.payloads[0]!.data, 'base64').toString('utf8');
    expect(plain).toContain('Zwetschgenbaum');
    expect(plain).toContain('Geheimweg 42');
  } finally {
    await server.close();
  }
});

it('encrypts failure messages: a rejection reason naming a person is not in the history in clear', async () => {
  const reference = `ENCF-${Date.now().toString(36)}`;
  const { reference_number: _r, ...order } = deliveryRequest({}, 1);
  await stack.deliveries.startDelivery(order, { reference, maxPrice: { amount: 1, currency: 'EUR' } });
  for (let i = 0; ; i++) {
    if ((await stack.deliveries.getStatus(reference)).phase === 'awaiting_approval') break;
    if (i > 200) throw new Error('no quote to approve');
    await new Promise((r) => setTimeout(r, 100));
  }
  const reason = 'recipient Zwetschgenbaum (+4915199988877) does not want it';
  await stack.deliveries.rejectQuote(reference, reason);
  // The client decodes the failure: the full message is there for whoever has the key.
  const failure = await stack.deliveries.result(reference).catch((e: Error) => e);
  const text = (e: unknown): string => (e instanceof Error ? `${e.message} ${text((e as { cause?: unknown }).cause)}` : '');
  expect(text(failure)).toContain('Zwetschgenbaum');

  const stored = historyJson(`delivery:${reference}`);
  expect(stored).not.toContain('Zwetschgenbaum');
  expect(stored).not.toContain('4915199988877');
  const failed = (JSON.parse(stored).events as { workflowExecutionFailedEventAttributes?: { failure: { message: string; encodedAttributes?: JsonPayload } } }[]).find((e) => e.workflowExecutionFailedEventAttributes);
  expect(failed?.workflowExecutionFailedEventAttributes?.failure.message).toBe('Encoded failure');
  expect(Buffer.from(failed?.workflowExecutionFailedEventAttributes?.failure.encodedAttributes?.metadata?.encoding ?? '', 'base64').toString()).toBe('binary/encrypted');
});

describe('the codec endpoint', () => {
  it('requires the token when one is configured', async () => {
    const server = createCodecServer({ codec, allowedOrigin: 'http://127.0.0.1:8233', token: 'operator-token-0123456789' });
    const url = await server.listen(0);
    try {
      const [payload] = await codec.encode([{ metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from('"x"') }]);
      const body = JSON.stringify({ payloads: [{ metadata: { encoding: Buffer.from(payload!.metadata!.encoding!).toString('base64'), 'encryption-key-id': Buffer.from('test1').toString('base64') }, data: Buffer.from(payload!.data!).toString('base64') }] });
      const denied = await fetch(`${url}/decode`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      expect(denied.status).toBe(401);
      const allowed = await fetch(`${url}/decode`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer operator-token-0123456789' }, body });
      expect(allowed.status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('cannot be fooled into decrypting with a key it does not have', async () => {
    const other = new AesGcmPayloadCodec([{ id: 'other', key: Buffer.alloc(32, 7) }]);
    const [payload] = await other.encode([{ metadata: {}, data: Buffer.from('secret') }]);
    await expect(codec.decode([payload!])).rejects.toThrow(/no payload key with id "other"/);
  });
});
