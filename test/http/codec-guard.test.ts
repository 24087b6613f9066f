/**
 * The codec endpoint as an attacker's page or a careless deployment would meet it (issue 17):
 * a text/plain POST with a foreign Origin, a rebinding Host, a 64 MiB body, a non-loopback bind
 * without a token. Each is refused and no plaintext leaves.
 */
import { request as httpRequest } from 'node:http';
import { createCodecServer, type CodecServer } from '../../temporal/codec-server';
import { generatePayloadKey, payloadCodecFromEnv } from '../../temporal/payload-codec';
import { rawRequest } from '../helpers/http';

const UI = 'http://127.0.0.1:8233';
const codec = payloadCodecFromEnv({ DELIVERY_PAYLOAD_KEYS: generatePayloadKey('guard') })!;
const NAME = 'Zwetschgenbaum +4915199988877';
let server: CodecServer;
let url: string;
let body: string;

beforeAll(async () => {
  server = createCodecServer({ codec, allowedOrigin: UI, maxBodyBytes: 1024 * 1024 });
  url = await server.listen(0);
  const [p] = await codec.encode([{ metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from(JSON.stringify(NAME)) }]);
  const b64 = (v: Uint8Array) => Buffer.from(v).toString('base64');
  body = JSON.stringify({ payloads: [{ metadata: Object.fromEntries(Object.entries(p!.metadata!).map(([k, v]) => [k, b64(v)])), data: b64(p!.data!) }] });
});
afterAll(() => server.close());

const plaintextIn = (text: string) => text.includes(Buffer.from(JSON.stringify(NAME)).toString('base64')) || text.includes('Zwetschgenbaum');

test('the Web UI (its origin, JSON) gets the plaintext, with CORS for that origin only', async () => {
  const a = await rawRequest(`${url}/decode`, { method: 'POST', headers: { 'content-type': 'application/json', origin: UI, 'x-namespace': 'default' }, body });
  expect(a.status).toBe(200);
  expect(plaintextIn(a.text)).toBe(true);
  expect(a.headers['access-control-allow-origin']).toBe(UI);
  const preflight = await rawRequest(`${url}/decode`, { method: 'OPTIONS', headers: { origin: UI, 'access-control-request-method': 'POST' } });
  expect(preflight.status).toBe(204);
  expect(preflight.headers['access-control-allow-origin']).toBe(UI);
});

test('the Temporal CLI (no Origin) gets its answer for no payloads, which proto3 JSON writes as {}', async () => {
  for (const path of ['/encode', '/decode']) {
    const a = await rawRequest(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect([path, a.status, JSON.parse(a.text)]).toEqual([path, 200, { payloads: [] }]);
  }
});

test('a foreign Origin, a text/plain POST or a rebinding Host gets no plaintext', async () => {
  const attempts: Record<string, string>[] = [
    { 'content-type': 'text/plain', origin: 'http://evil.example', host: 'evil.example:8234' }, // the request
    { 'content-type': 'text/plain', origin: UI },
    { 'content-type': 'application/json', origin: 'http://evil.example' },
    { 'content-type': 'application/json', origin: 'null' },
    { 'content-type': 'application/json', host: `evil.example:${new URL(url).port}` },
  ];
  for (const headers of attempts) {
    for (const path of ['/decode', '/encode']) {
      const a = await rawRequest(url + path, { method: 'POST', headers, body });
      expect([403, 415]).toContain(a.status);
      expect(plaintextIn(a.text)).toBe(false);
      if (headers.origin !== UI) expect(a.headers['access-control-allow-origin']).toBeUndefined();
    }
  }
  const preflight = await rawRequest(`${url}/decode`, { method: 'OPTIONS', headers: { origin: 'http://evil.example', 'access-control-request-method': 'POST' } });
  expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
});

test('a 64 MiB body is refused while it streams in, not after reading it all', async () => {
  const port = Number(new URL(url).port);
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  let sent = 0;
  const outcome = await new Promise<{ status: number | undefined; sent: number }>((resolve) => {
    let status: number | undefined;
    const req = httpRequest({ host: '127.0.0.1', port, path: '/decode', method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }, agent: false }, (res) => {
      status = res.statusCode;
      res.resume();
      res.on('end', () => resolve({ status, sent }));
    });
    req.on('error', () => resolve({ status, sent }));
    const pump = () => {
      while (sent < 64 * 1024 * 1024) {
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });
  expect(outcome.status).toBe(413);
  // The server stopped at the 1 MiB cap; socket buffers let a few MiB more be written at most.
  expect(outcome.sent).toBeLessThan(32 * 1024 * 1024);
  // And it still serves the UI afterwards.
  const a = await rawRequest(`${url}/decode`, { method: 'POST', headers: { 'content-type': 'application/json', origin: UI }, body });
  expect(a.status).toBe(200);
});

test('bound beyond loopback it refuses to start without a token', async () => {
  const open = createCodecServer({ codec, allowedOrigin: UI });
  await expect(open.listen(0, '0.0.0.0')).rejects.toThrow(/DELIVERY_CODEC_TOKEN/);
  const withToken = createCodecServer({ codec, allowedOrigin: UI, token: 'operator-token-0123456789' });
  const u = await withToken.listen(0, '0.0.0.0');
  try {
    const port = new URL(u).port;
    const denied = await rawRequest(`http://127.0.0.1:${port}/decode`, { method: 'POST', headers: { 'content-type': 'application/json', origin: UI }, body });
    expect(denied.status).toBe(401);
    expect(plaintextIn(denied.text)).toBe(false);
    const allowed = await rawRequest(`http://127.0.0.1:${port}/decode`, { method: 'POST', headers: { 'content-type': 'application/json', origin: UI, authorization: 'Bearer operator-token-0123456789' }, body });
    expect(allowed.status).toBe(200);
  } finally {
    await withToken.close();
  }
});
