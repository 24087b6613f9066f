/**
 * Webhooks that never lose a status. The simulator runs deliveries on its own while it
 * duplicates 10% of its webhooks, holds back and reorders 30%, and drops 5% for good; the bridge
 * restarts in the middle; and an attacker replays and tampers with real signed requests all along.
 * Every workflow must still end in the simulator's final state, and no forged or replayed
 * request may change anything.
 */
import { createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createBridge, WEBHOOK_PATH, type Bridge } from '../../bridge/server';
import { ProviderClient } from '../../provider/client';
import type { DeliveryState } from '../../contract/delivery-types';
import { deliveryRequest } from '../fixtures/orders';
import { readBody } from '../helpers/http';
import { eventually, SANDBOX_KEY, startStack, type Stack } from '../helpers/stack';

const DELIVERIES = 24;
const DESTINATIONS = 3;

interface Captured {
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/**
 * Sits between the simulator and the bridge: forwards every webhook and keeps a copy for the
 * attacker. The bridge behind it can be swapped (restarted) while the simulator keeps sending.
 */
async function recordingProxy(target: () => string | undefined) {
  const captured: Captured[] = [];
  const server = createServer(async (req, res) => {
    const body = await readBody(req);
    captured.push({ headers: req.headers, body });
    const to = target();
    if (!to) {
      res.writeHead(502).end();
      return;
    }
    const fwd = httpRequest(to + WEBHOOK_PATH, { method: 'POST', headers: { ...req.headers, host: new URL(to).host } }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    fwd.on('error', () => res.writeHead(502).end());
    fwd.end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, captured, close: () => new Promise<void>((r) => server.close(() => r())) };
}

async function send(url: string, headers: Record<string, string>, body: Buffer | string): Promise<number> {
  const res = await fetch(url + WEBHOOK_PATH, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  await res.arrayBuffer();
  return res.status;
}

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({
    simulator: {
      timeScale: 20,
      autoAdvanceMs: 4_000, // 200 ms per lifecycle step
      seed: 7,
      faults: { webhook_duplicate_rate: 0.1, webhook_reorder_rate: 0.3, webhook_drop_rate: 0.05 },
    },
  });
});
afterAll(() => stack.stop());

it(`every one of ${DELIVERIES} deliveries ends in the provider's true state through duplicates, reordering, drops, a bridge restart and forged requests`, async () => {
  // The simulator now talks to a recording proxy in front of a bridge we can restart.
  let bridge: Bridge | undefined = stack.bridge;
  let bridgeUrl: string | undefined = stack.bridgeUrl;
  const proxy = await recordingProxy(() => bridgeUrl);
  stack.sim.setWebhookEndpoint({ url: proxy.url + WEBHOOK_PATH, secret: stack.webhookSecret });

  const references = Array.from({ length: DELIVERIES }, (_, i) => `CHAOS-${Date.now().toString(36)}-${i}`);
  for (const reference of references) {
    const { reference_number: _r, ...order } = deliveryRequest({ is_food: true }, DESTINATIONS);
    await stack.deliveries.startDelivery(order, { reference, followUp: { quietMs: 3_000, jitter: 0.3 } });
  }

  // The attacker: replays captured requests verbatim, with a tampered body, and with a forged
  // fresh timestamp; plus events signed with a guessed secret. Until every delivery has ended.
  let attacking = true;
  const attackAnswers: Record<string, number[]> = { verbatim: [], tampered: [], retimed: [], guessed: [] };
  const attacker = (async () => {
    let i = 0;
    while (attacking) {
      await new Promise((r) => setTimeout(r, 15));
      const victim = proxy.captured[i++ % Math.max(1, proxy.captured.length)];
      if (!victim || !bridgeUrl) continue;
      const h = { 'webhook-id': String(victim.headers['webhook-id']), 'webhook-timestamp': String(victim.headers['webhook-timestamp']), 'webhook-signature': String(victim.headers['webhook-signature']) };
      const event = JSON.parse(victim.body.toString());
      const forgedBody = JSON.stringify({ ...event, data: { ...event.data, status: 'CANCELED' } });
      const url = bridgeUrl;
      try {
        attackAnswers.verbatim!.push(await send(url, h, victim.body));
        attackAnswers.tampered!.push(await send(url, h, forgedBody));
        attackAnswers.retimed!.push(await send(url, { ...h, 'webhook-timestamp': String(Math.floor(Date.now() / 1000) + 1) }, victim.body));
        attackAnswers.guessed!.push(await send(url, { ...h, 'webhook-signature': 'v1,' + Buffer.alloc(32, i).toString('base64') }, forgedBody));
      } catch {
        // the bridge is restarting
      }
    }
  })();

  // The bridge restarts once deliveries are under way; the simulator's retries carry it over.
  await eventually('webhooks to flow', () => (proxy.captured.length > 40 ? true : undefined));
  await bridge.close();
  bridgeUrl = undefined;
  await new Promise((r) => setTimeout(r, 1_000));
  const provider = new ProviderClient({ baseUrl: stack.simUrl, apiKey: SANDBOX_KEY });
  bridge = createBridge({ temporal: stack.temporal, provider, secrets: [stack.webhookSecret], retryAfterSeconds: 1, log: () => undefined });
  bridgeUrl = await bridge.listen(0, '127.0.0.1');

  const results = await Promise.all(references.map((r) => stack.deliveries.result(r)));
  // Enough attacks to mean something, however fast the deliveries were.
  await eventually('40 rounds of attacks', () => (attackAnswers.tampered!.length >= 40 ? true : undefined), 60_000);
  attacking = false;
  await attacker;

  try {
    const truth = new Map(stack.sim.deliveries().map((d) => [d.delivery.reference_number, d.delivery]));
    const mismatches: string[] = [];
    for (const result of results as DeliveryState[]) {
      const real = truth.get(result.reference)!;
      const ours = { status: result.status, destinations: result.destinations.map((d) => `${d.id}:${d.status}`) };
      const theirs = { status: real.status, destinations: real.destinations.map((d) => `${d.id}:${d.status}`) };
      if (JSON.stringify(ours) !== JSON.stringify(theirs)) mismatches.push(`${result.reference}: ours ${JSON.stringify(ours)} vs provider ${JSON.stringify(theirs)}`);
    }
    expect(mismatches).toEqual([]);
    expect(results.every((r) => r.status === 'DELIVERED')).toBe(true);

    // Nothing in any timeline came from an event the provider did not send.
    const realEventIds = new Set(stack.sim.webhookEvents().map((e) => e.event_id));
    const applied = results.flatMap((r) => r.timeline.filter((e) => e.source === 'webhook'));
    expect(applied.filter((e) => !realEventIds.has(e.eventId!))).toEqual([]);

    // The faults really happened, and reconciliation really repaired something.
    const dispatches = stack.sim.webhookEvents();
    expect(dispatches.filter((d) => d.state === 'dropped').length).toBeGreaterThan(0);
    expect(dispatches.filter((d) => d.copy === 1).length).toBeGreaterThan(0);
    expect(results.flatMap((r) => r.timeline).filter((e) => e.source === 'reconciliation' && e.status).length).toBeGreaterThan(0);

    // The attacker got nowhere: tampered, re-timed and guessed requests were refused outright;
    // verbatim replays were recognised (duplicate, or already applied) and changed nothing.
    for (const kind of ['tampered', 'retimed', 'guessed']) expect(new Set(attackAnswers[kind])).toEqual(new Set([401]));
    expect(attackAnswers.verbatim!.every((s) => s === 200 || s === 503)).toBe(true);
  } finally {
    await bridge.close();
    await provider.close();
    await proxy.close();
  }
}, 180_000);
