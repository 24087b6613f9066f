/**
 * The bridge while Temporal cannot be reached (a frontend down and restarting, a ring moving its
 * shards): a signed webhook is answered 503 + Retry-After within the bridge's Temporal timeout,
 * never left hanging, so the provider's own retry carries the event over. Real HTTP on 127.0.0.1,
 * a real simulator for the reference lookup; Temporal is a closed port or a listener that
 * accepts connections and never answers.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { request } from 'undici';
import { Client, Connection } from '@temporalio/client';
import { WEBHOOK_PATH, createBridge, type Bridge } from '../../bridge/server';
import { ProviderClient } from '../../provider/client';
import { generateWebhookSecret, signWebhook } from '../../provider/webhook-signature';
import { clientInterceptors } from '../../temporal/client-connection';
import { freePort } from '../../scripts/temporal-dev-server';
import { KEY, call, createBody, startSimulator, type Started } from './simulator-fixtures';

const secret = generateWebhookSecret();
const TIMEOUT_MS = 1_500;
let s: Started;
let silent: Server;
const sockets: Socket[] = [];

beforeAll(async () => {
  s = await startSimulator({ seed: 7 });
  // Accepts TCP connections and says nothing: a process stopped (SIGSTOP) or a network that drops replies.
  silent = createServer((socket) => sockets.push(socket));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
});
afterAll(async () => {
  sockets.forEach((socket) => socket.destroy());
  silent.close();
  await s.sim.close();
});

async function bridgeOn(address: string): Promise<{ bridge: Bridge; url: string; connection: Connection }> {
  // Lazy: the bridge was started while Temporal was up; it is the calls afterwards that fail.
  const connection = Connection.lazy({ address, interceptors: clientInterceptors() });
  const bridge = createBridge({
    temporal: new Client({ connection }),
    provider: new ProviderClient({ baseUrl: s.url, apiKey: KEY }),
    secrets: [secret],
    retryAfterSeconds: 3,
    temporalTimeoutMs: TIMEOUT_MS,
    log: () => undefined,
  });
  return { bridge, url: await bridge.listen(0, '127.0.0.1'), connection };
}

async function signedEvent(): Promise<{ body: string; headers: Record<string, string> }> {
  const created = await call(s.url, 'POST', '/v1/deliveries', { body: { ...createBody(), reference_number: `DOWN-${Date.now()}` } });
  const deliveryId = (created.json as { id: string }).id;
  const evt = { id: `evt_down${Date.now()}`, type: 'delivery.status_changed', created_at: new Date().toISOString(), data: { delivery_id: deliveryId, status: 'ASSIGNED' } };
  const body = JSON.stringify(evt);
  return { body, headers: { 'content-type': 'application/json', ...signWebhook(secret, evt.id, Math.floor(Date.now() / 1000), body) } };
}

describe.each([
  ['refuses connections (its process is down)', async () => `127.0.0.1:${await freePort()}`],
  ['accepts connections and never answers', async () => `127.0.0.1:${(silent.address() as { port: number }).port}`],
])('when Temporal %s', (_what, address) => {
  it('answers a webhook 503 retry_later (Temporal is unavailable) with Retry-After within its Temporal timeout', async () => {
    const { bridge, url, connection } = await bridgeOn(await address());
    try {
      const { body, headers } = await signedEvent();
      const started = Date.now();
      const res = await request(url + WEBHOOK_PATH, { method: 'POST', body, headers });
      const answer = (await res.body.json()) as { outcome: string; reason: string; workflow_id: string };
      const tookMs = Date.now() - started;
      expect({ status: res.statusCode, retryAfter: res.headers['retry-after'], outcome: answer.outcome, reason: answer.reason }).toEqual({
        status: 503,
        retryAfter: '3',
        outcome: 'retry_later',
        reason: 'Temporal is unavailable',
      });
      // Without the deadline the client's own retries take about 20 s (refused) or until the
      // provider gives up on the request (silent): longer than a webhook sender waits.
      expect(tookMs).toBeLessThan(TIMEOUT_MS + 3_000);
    } finally {
      await bridge.close();
      await connection.close();
    }
  });
});
