/**
 * The webhook bridge under hostile or broken input, with every part real (startStack): a seeded
 * fuzz run, replays, slow clients, and what operators see on / and /metrics. The simulator's
 * own webhooks are switched off, so every webhook the bridge counts is one this file sent.
 */
import { execFile } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Client } from '@temporalio/client';
import { bridgeConfigFromEnv } from '../../bridge/config';
import { Agent, request } from 'undici';
import { createBridge, WEBHOOK_PATH } from '../../bridge/server';
import { ProviderClient } from '../../provider/client';
import { secretKey, signWebhook } from '../../provider/webhook-signature';
import type { DeliveryState } from '../../contract/delivery-types';
import { deliveryRequest } from '../fixtures/orders';
import { rawRequest } from '../helpers/http';
import { parsePrometheusText, type Exposition } from '../helpers/prometheus';
import { createdDelivery, eventually, SANDBOX_KEY, startStack, type Stack } from '../helpers/stack';
import { seededRandom } from '../../simulator/faults';
import { fuzzCase, post as fuzzPost, type FuzzTarget, type Result } from '../helpers/webhook-fuzz';

const run = promisify(execFile);
const FUZZ_REQUESTS = 10_000;
const FUZZ_CONCURRENCY = 32;
const FUZZ_SEED = Number(process.env.FUZZ_SEED ?? 20261122);

let stack: Stack;
let agent: Agent;
let seq = 0;

beforeAll(async () => {
  const unlimited = { limit: 1_000_000 };
  stack = await startStack({ simulator: { rateLimits: { creations: unlimited, quotes: unlimited, other: unlimited } } });
  stack.sim.setWebhookEndpoint(null);
  agent = new Agent({ connections: FUZZ_CONCURRENCY });
});
afterAll(async () => {
  await agent.close();
  await stack.stop();
});

async function followedDelivery(): Promise<DeliveryState> {
  const reference = `HARD-${Date.now().toString(36)}-${++seq}`;
  const { reference_number: _r, ...order } = deliveryRequest({}, 2);
  await stack.deliveries.startDelivery(order, { reference });
  return createdDelivery(stack, reference);
}

function event(deliveryId: string, status: string) {
  return { id: `evt_hard${Date.now()}${++seq}`, type: 'delivery.status_changed', created_at: new Date().toISOString(), data: { delivery_id: deliveryId, status } };
}

function signed(evt: { id: string }, at = Date.now()) {
  const body = JSON.stringify(evt);
  return { body, headers: { 'content-type': 'application/json', ...signWebhook(stack.webhookSecret, evt.id, Math.floor(at / 1000), body) } };
}

async function post(body: string, headers: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await request(stack.bridgeUrl + WEBHOOK_PATH, { method: 'POST', body, headers });
  return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
}

async function metrics(): Promise<Exposition> {
  const res = await request(stack.bridgeAdminUrl + '/metrics');
  expect(res.statusCode).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheusText(await res.body.text());
}

/** Status signals only: the limiter's slot answers are signals too. */
async function signalsIn(workflowId: string): Promise<number> {
  const history = await stack.temporal.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'statusChanged').length;
}

const webhooks = (outcome: string, reason: string) => ['bridge_webhooks_total', { account: 'default', outcome, reason }] as const;

describe('the hardened webhook bridge', () => {
  it(`survives ${FUZZ_REQUESTS} random and malformed requests and accepts none of them`, async () => {
    const s = await followedDelivery();
    const workflowId = `delivery:${s.reference}`;
    const before = await metrics();
    const port = Number(new URL(stack.bridgeUrl).port);
    const adminPort = Number(new URL(stack.bridgeAdminUrl).port);
    const target: FuzzTarget = { host: '127.0.0.1', port, adminPort, secret: stack.webhookSecret, deliveryId: s.deliveryId!, destinationId: s.destinations[0]!.id, dispatcher: agent };
    const random = seededRandom(FUZZ_SEED);
    const failures: { i: number; kind: string; result: Result }[] = [];
    const byKind = new Map<string, Map<Result, number>>();
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: FUZZ_CONCURRENCY }, async () => {
        while (next < FUZZ_REQUESTS) {
          const i = next++;
          const c = fuzzCase(random, target, i);
          const result = await c.run();
          const counts = byKind.get(c.kind) ?? new Map<Result, number>();
          byKind.set(c.kind, counts.set(result, (counts.get(result) ?? 0) + 1));
          if (!c.allowed.includes(result)) failures.push({ i, kind: c.kind, result });
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `fuzz: ${FUZZ_REQUESTS} requests in ${seconds.toFixed(1)} s (seed ${FUZZ_SEED})\n` +
        [...byKind].map(([kind, counts]) => `  ${kind}: ${[...counts].map(([r, n]) => `${r}×${n}`).join(' ')}`).join('\n'),
    );

    expect(failures.slice(0, 20)).toEqual([]);
    // A bound against a hang, not a speed target (43 s alone, 73 s with the whole suite on 2 busy cores).
    expect(seconds).toBeLessThan(150);
    const health = await request(stack.bridgeUrl + '/healthz');
    expect(health.statusCode).toBe(200);
    await health.body.dump();

    // Nothing forged reached the workflow: same status, no webhook in its timeline, no signal at all.
    const after = await stack.deliveries.getStatus(s.reference);
    expect(after.status).toBe('CREATED');
    expect(after.destinations.map((d) => d.status)).toEqual(s.destinations.map((d) => d.status));
    expect(after.timeline.filter((e) => e.source === 'webhook')).toEqual([]);
    expect(await signalsIn(workflowId)).toBe(0);

    const m = await metrics();
    for (const [outcome, reason] of [
      ['accepted', 'signal_delivered'],
      ['duplicate', 'already_delivered'],
      ['workflow_closed', 'workflow_closed'],
    ]) {
      expect(m.value(...webhooks(outcome!, reason!)) - before.value(...webhooks(outcome!, reason!))).toBe(0);
    }
    expect(m.sum('bridge_webhooks_total', { reason: 'internal_error' })).toBe(0);
    // The only retry_later answers are the intended ones: signed events of deliveries nobody knows.
    const retries = m.sum('bridge_webhooks_total', { outcome: 'retry_later' }) - before.sum('bridge_webhooks_total', { outcome: 'retry_later' });
    expect(retries).toBe(m.value(...webhooks('retry_later', 'unknown_delivery')) - before.value(...webhooks('retry_later', 'unknown_delivery')));
    expect(m.sum('bridge_webhooks_total', { outcome: 'rejected' }) - before.sum('bridge_webhooks_total', { outcome: 'rejected' })).toBeGreaterThan(FUZZ_REQUESTS / 2);
  }, 200_000);

  it('answers a replayed request (same bytes, within tolerance) with duplicate and signals only once', async () => {
    const s = await followedDelivery();
    const workflowId = `delivery:${s.reference}`;
    const { body, headers } = signed(event(s.deliveryId!, 'ASSIGNED'));
    expect(await post(body, headers)).toEqual({ status: 200, body: { outcome: 'accepted', workflow_id: workflowId } });
    expect(await post(body, headers)).toEqual({ status: 200, body: { outcome: 'duplicate', workflow_id: workflowId } });
    expect((await stack.deliveries.getStatus(s.reference)).status).toBe('ASSIGNED');
    expect(await signalsIn(workflowId)).toBe(1);

    // Copies arriving together: one signal, the rest wait for it and answer duplicate.
    const again = signed(event(s.deliveryId!, 'UPCOMING'));
    const answers = await Promise.all(Array.from({ length: 8 }, () => post(again.body, again.headers)));
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    expect(answers.map((a) => a.body.outcome).sort()).toEqual(['accepted', ...Array(7).fill('duplicate')]);
    expect(await signalsIn(workflowId)).toBe(2);
    expect((await stack.deliveries.getStatus(s.reference)).status).toBe('UPCOMING');
  });

  it('lists recent verified webhooks with their outcomes on the admin listener only, without any secret or signature', async () => {
    const s = await followedDelivery();
    const accepted = signed(event(s.deliveryId!, 'ASSIGNED'));
    await post(accepted.body, accepted.headers);
    await post(accepted.body, accepted.headers);
    const unknown = signed(event('del_nobody', 'ASSIGNED'));
    await post(unknown.body, unknown.headers);
    const hostile = { ...signed(event(s.deliveryId!, 'DELIVERED')).headers, 'webhook-id': '<script>alert(1)</script>', 'webhook-signature': 'v1,Zm9yZ2Vk' };
    await post('{}', hostile);

    // The internet-facing listener shows nothing: no delivery id, no workflow id, no metrics.
    for (const path of ['/', '/metrics', '/?x', '/index.html']) {
      const pub = await request(stack.bridgeUrl + path);
      const text = await pub.body.text();
      expect(pub.statusCode).toBe(404);
      expect(text).not.toContain(s.deliveryId!);
      expect(text).not.toContain(s.reference);
      expect(text).not.toContain('bridge_webhooks_total');
    }

    const res = await request(stack.bridgeAdminUrl + '/');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    const html = await res.body.text();
    const acceptedId = JSON.parse(accepted.body).id as string;
    const row = (id: string) => html.split('\n').filter((line) => line.includes(`<td>${id}</td>`));
    expect(row(acceptedId)).toHaveLength(2);
    expect(row(acceptedId).join('\n')).toMatch(/<td>accepted<\/td>/);
    expect(row(acceptedId).join('\n')).toMatch(/<td>duplicate<\/td>/);
    expect(row(acceptedId)[0]).toContain(`<td>delivery:${s.reference}</td>`);
    expect(row(acceptedId)[0]).toContain(`<td>${s.deliveryId}</td>`);
    expect(row(JSON.parse(unknown.body).id)[0]).toMatch(/<td>retry_later<\/td><td>unknown delivery<\/td>/);
    // The unsigned request is not listed at all (it is counted in the metrics).
    expect(html).not.toContain('alert(1)');
    expect(html).not.toContain('<script');

    for (const secretish of [stack.webhookSecret, secretKey(stack.webhookSecret).toString('base64'), accepted.headers['webhook-signature'], unknown.headers['webhook-signature'], 'Zm9yZ2Vk', SANDBOX_KEY]) {
      expect(html).not.toContain(secretish);
    }

    // A DNS-rebinding page or a foreign origin reads nothing from the admin listener either.
    const port = new URL(stack.bridgeAdminUrl).port;
    const foreign: Record<string, string>[] = [{ host: `evil.example:${port}` }, { origin: 'http://evil.example' }, { origin: 'null' }];
    for (const headers of foreign) {
      for (const path of ['/', '/metrics']) {
        const a = await rawRequest(stack.bridgeAdminUrl + path, { headers });
        expect(a.status).toBe(403);
        expect(a.text).not.toContain(s.deliveryId!);
        expect(a.text).not.toContain('bridge_webhooks_total');
      }
    }
  });

  it('exposes Prometheus counters on /metrics that match what was sent', async () => {
    const s = await followedDelivery();
    const before = await metrics();
    const first = signed(event(s.deliveryId!, 'ASSIGNED'));
    const second = signed(event(s.deliveryId!, 'UPCOMING'));
    expect((await post(first.body, first.headers)).status).toBe(200);
    expect((await post(second.body, second.headers)).status).toBe(200);
    expect((await post(second.body, second.headers)).body.outcome).toBe('duplicate');
    for (let i = 0; i < 3; i++) {
      const forged = signed(event(s.deliveryId!, 'DELIVERED'));
      expect((await post(forged.body, { ...forged.headers, 'webhook-signature': `v1,${Buffer.alloc(32, i).toString('base64')}` })).status).toBe(401);
    }
    const stale = signed(event(s.deliveryId!, 'DELIVERED'), Date.now() - 10 * 60_000);
    expect((await post(stale.body, stale.headers)).status).toBe(401);
    expect((await post(first.body, { ...first.headers, 'content-type': 'text/plain' })).status).toBe(415);
    const notJson = '{not json';
    expect((await post(notJson, { 'content-type': 'application/json', ...signWebhook(stack.webhookSecret, 'evt_nj', Math.floor(Date.now() / 1000), notJson) })).status).toBe(400);
    const unknown = signed(event('del_nobody_either', 'ASSIGNED'));
    expect((await post(unknown.body, unknown.headers)).status).toBe(503);

    const after = await metrics();
    expect(after.types.get('bridge_webhooks_total')).toBe('counter');
    expect(after.types.get('bridge_webhook_handling_seconds')).toBe('histogram');
    expect(after.types.get('bridge_reference_cache_entries')).toBe('gauge');
    const delta = (outcome: string, reason: string) => after.value(...webhooks(outcome, reason)) - before.value(...webhooks(outcome, reason));
    expect({
      accepted: delta('accepted', 'signal_delivered'),
      duplicate: delta('duplicate', 'already_delivered'),
      forged: delta('rejected', 'no_matching_signature'),
      stale: delta('rejected', 'timestamp_out_of_tolerance'),
      mediaType: delta('rejected', 'unsupported_media_type'),
      invalidJson: delta('rejected', 'invalid_json'),
      unknown: delta('retry_later', 'unknown_delivery'),
      total: after.sum('bridge_webhooks_total') - before.sum('bridge_webhooks_total'),
    }).toEqual({ accepted: 2, duplicate: 1, forged: 3, stale: 1, mediaType: 1, invalidJson: 1, unknown: 1, total: 10 });
    const handled = (outcome: string) => after.value('bridge_webhook_handling_seconds_count', { outcome }) - before.value('bridge_webhook_handling_seconds_count', { outcome });
    expect([handled('accepted'), handled('duplicate'), handled('rejected'), handled('retry_later')]).toEqual([2, 1, 6, 1]);
    expect(after.value('bridge_reference_cache_entries')).toBeGreaterThanOrEqual(1);
    // Per-bridge registry: no process metrics unless bridge/main.ts adds them.
    expect(after.samples.some((x) => x.name.startsWith('process_') || x.name.startsWith('nodejs_'))).toBe(false);
  });

  it('closes slow and silent connections by its timeouts while still serving others', async () => {
    const provider = new ProviderClient({ baseUrl: stack.simUrl, apiKey: SANDBOX_KEY });
    const quick = createBridge({
      temporal: stack.temporal,
      provider,
      secrets: [stack.webhookSecret],
      log: () => undefined,
      timeouts: { headersMs: 500, requestMs: 1_000, keepAliveMs: 500, checkIntervalMs: 100 },
    });
    const url = await quick.listen(0, '127.0.0.1');
    const port = Number(new URL(url).port);
    /** Opens a connection, writes `first`, then one more byte every 50 ms if `drip`; resolves with the ms until the bridge closes it. */
    const closedAfter = (first: string, drip: boolean) =>
      new Promise<number>((resolve) => {
        const t0 = performance.now();
        let timer: NodeJS.Timeout | undefined;
        const socket: Socket = connect(port, '127.0.0.1', () => {
          if (first) socket.write(first);
          if (drip) timer = setInterval(() => socket.writable && socket.write('x'), 50);
        });
        socket.on('error', () => undefined);
        socket.resume(); // read (and drop) the 408, or 'close' waits for someone to consume it
        socket.on('close', () => {
          clearInterval(timer);
          resolve(performance.now() - t0);
        });
      });
    try {
      const silent = closedAfter('', false);
      const slowHeaders = closedAfter(`POST ${WEBHOOK_PATH} HTTP/1.1\r\nHost: x\r\nX-Slow: `, true);
      const slowBody = closedAfter(`POST ${WEBHOOK_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`, true);
      const health = await request(url + '/healthz');
      expect(health.statusCode).toBe(200);
      await health.body.dump();
      const [a, b, c] = await Promise.all([silent, slowHeaders, slowBody]);
      for (const ms of [a, b, c]) expect(ms).toBeLessThan(3_000);
      const after = await request(url + '/healthz');
      expect(after.statusCode).toBe(200);
      await after.body.dump();
    } finally {
      await quick.close();
      await provider.close();
    }
  });

  it('sends a fuzz post through the same helper as a sanity check of the harness', async () => {
    const s = await followedDelivery();
    const target: FuzzTarget = { host: '127.0.0.1', port: Number(new URL(stack.bridgeUrl).port), secret: stack.webhookSecret, deliveryId: s.deliveryId!, destinationId: s.destinations[0]!.id, dispatcher: agent };
    // The harness itself can deliver a correctly signed event, so its 401s above are the bridge's doing.
    const good = signed(event(s.deliveryId!, 'ASSIGNED'));
    expect(await fuzzPost(target, good.body, good.headers)).toBe(200);
    expect((await stack.deliveries.getStatus(s.reference)).status).toBe('ASSIGNED');
  });
});

describe('what a replay or a flood costs (issue 17)', () => {
  /** The stack's real Temporal client, with its signal and describe calls counted. */
  function countingClient(): { client: Client; signals: () => number; describes: () => number } {
    let signals = 0;
    let describes = 0;
    const workflow = {
      getHandle: (id: string) => {
        const h = stack.temporal.workflow.getHandle(id);
        return {
          signal: (...args: Parameters<typeof h.signal>) => {
            signals++;
            return h.signal(...args);
          },
          describe: () => {
            describes++;
            return h.describe();
          },
        };
      },
    };
    // The bridge bounds each call with the client's deadline (BRIDGE_TEMPORAL_TIMEOUT_MS): the real client's.
    const withDeadline = <R>(deadline: number | Date, fn: () => Promise<R>) => stack.temporal.withDeadline(deadline, fn);
    return { client: { workflow, withDeadline } as unknown as Client, signals: () => signals, describes: () => describes };
  }

  async function bridgeWith(extra: Partial<Parameters<typeof createBridge>[0]> = {}) {
    const provider = new ProviderClient({ baseUrl: stack.simUrl, apiKey: SANDBOX_KEY });
    const counting = countingClient();
    const bridge = createBridge({ temporal: counting.client, provider, secrets: [stack.webhookSecret], log: () => undefined, ...extra });
    const url = await bridge.listen(0, '127.0.0.1');
    const adminUrl = await bridge.listenAdmin(0, '127.0.0.1');
    return {
      ...counting,
      bridge,
      url,
      adminUrl,
      post: async (body: string, headers: Record<string, string>) => {
        const res = await request(url + WEBHOOK_PATH, { method: 'POST', body, headers, dispatcher: agent });
        return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
      },
      stop: async () => {
        await bridge.close();
        await provider.close();
      },
    };
  }

  /** `n` copies of one request, 10 at a time. */
  async function replay<T>(n: number, send: () => Promise<T>): Promise<T[]> {
    const out: T[] = [];
    for (let i = 0; i < n; i += 10) out.push(...(await Promise.all(Array.from({ length: Math.min(10, n - i) }, send))));
    return out;
  }

  const providerGets = (deliveryId: string) => stack.sim.requestLog().filter((e) => e.method === 'GET' && e.path === `/v1/deliveries/${deliveryId}`).length;

  it('100 replays of a signed event for an unknown delivery make at most two provider GETs', async () => {
    const b = await bridgeWith();
    try {
      const evt = signed(event('del_replayed_nobody', 'ASSIGNED'));
      const answers = await replay(100, () => b.post(evt.body, evt.headers));
      expect(answers.every((a) => a.status === 503 && a.body.reason === 'unknown delivery')).toBe(true);
      expect(providerGets('del_replayed_nobody')).toBeLessThanOrEqual(2);
      expect(b.signals()).toBe(0);
      const m = parsePrometheusText(await (await request(b.adminUrl + '/metrics')).body.text());
      expect(m.value('bridge_negative_cache_hits_total', { kind: 'unknown_delivery' })).toBeGreaterThanOrEqual(98);
    } finally {
      await b.stop();
    }
  });

  it('100 replays of a signed event for an ended workflow make at most two signals and two describes', async () => {
    const s = await followedDelivery();
    await stack.deliveries.cancelDelivery(s.reference);
    const before = await stack.temporal.workflow.getHandle(`delivery:${s.reference}`).fetchHistory();
    const b = await bridgeWith();
    try {
      const gets = providerGets(s.deliveryId!);
      const evt = signed(event(s.deliveryId!, 'DELIVERED'));
      const answers = await replay(100, () => b.post(evt.body, evt.headers));
      expect(answers.map((a) => `${a.status} ${a.body.outcome}`)).toEqual(Array(100).fill('200 workflow_closed'));
      expect(b.signals()).toBeLessThanOrEqual(2);
      expect(b.describes()).toBeLessThanOrEqual(2);
      expect(providerGets(s.deliveryId!) - gets).toBeLessThanOrEqual(2);
      // Nothing changed in the ended workflow.
      const after = await stack.temporal.workflow.getHandle(`delivery:${s.reference}`).fetchHistory();
      expect(after.events?.length).toBe(before.events?.length);
    } finally {
      await b.stop();
    }
  });

  it('logs unsigned requests at a bounded rate, lists only the verified one, counts them all', async () => {
    const lines: Record<string, unknown>[] = [];
    const b = await bridgeWith({ log: (l) => lines.push(l), rejectedLogLinesPerMinute: 20 });
    try {
      const s = await followedDelivery();
      const real = signed(event(s.deliveryId!, 'ASSIGNED'));
      await replay(250, () => b.post('{}', { 'content-type': 'application/json', 'webhook-id': `evt_junk${++seq}`, 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': 'v1,Zm9yZ2Vk' }));
      expect((await b.post(real.body, real.headers)).status).toBe(200);
      expect(lines.filter((l) => l.msg === 'webhook rejected')).toHaveLength(20);
      expect(lines.filter((l) => l.msg === 'webhook')).toEqual([expect.objectContaining({ outcome: 'accepted', event_id: JSON.parse(real.body).id })]);
      const html = await (await request(b.adminUrl + '/')).body.text();
      expect(html).toContain(`<td>${JSON.parse(real.body).id}</td>`);
      expect(html).not.toContain('evt_junk');
      const m = parsePrometheusText(await (await request(b.adminUrl + '/metrics')).body.text());
      expect(m.value('bridge_webhooks_total', { account: 'default', outcome: 'rejected', reason: 'no_matching_signature' })).toBe(250);
      expect(m.value('bridge_rejected_log_lines_suppressed_total')).toBe(230);
    } finally {
      await b.stop();
    }
  });

  it('caps open connections, dropping the excess at once, and serves again when they go', async () => {
    const b = await bridgeWith({ maxConnections: 4 });
    const port = Number(new URL(b.url).port);
    const sockets: Socket[] = [];
    try {
      const closed = await Promise.all(
        Array.from({ length: 12 }, () => {
          return new Promise<boolean>((resolve) => {
            const socket = connect(port, '127.0.0.1');
            sockets.push(socket);
            socket.on('error', () => undefined);
            socket.on('close', () => resolve(true));
            setTimeout(() => resolve(false), 1_000);
          });
        }),
      );
      expect(closed.filter(Boolean).length).toBe(8);
      const m = parsePrometheusText(await (await request(b.adminUrl + '/metrics')).body.text());
      expect(m.value('bridge_connections_dropped_total')).toBe(8);
      sockets.forEach((x) => x.destroy());
      await eventually('the bridge to serve again', async () => {
        const res = await request(b.url + '/healthz', { reset: true }).catch(() => undefined);
        await res?.body.dump();
        return res?.statusCode === 200 ? true : undefined;
      });
    } finally {
      sockets.forEach((x) => x.destroy());
      await b.stop();
    }
  });

  it('refuses to start on a weak or malformed webhook secret, naming the problem and not the secret', async () => {
    const provider = new ProviderClient({ baseUrl: stack.simUrl, apiKey: SANDBOX_KEY });
    try {
      for (const weak of ['whsec_AB', 'whsec_!!AB??', `whsec_${Buffer.alloc(16, 3).toString('base64')}`]) {
        expect(() => createBridge({ temporal: stack.temporal, provider, secrets: [stack.webhookSecret, weak] })).toThrow(/webhook secret 2 of 2 is not accepted/);
        expect(() => bridgeConfigFromEnv({ DELIVERY_WEBHOOK_SECRETS: weak })).toThrow(/DELIVERY_WEBHOOK_SECRETS/);
      }
    } finally {
      await provider.close();
    }
    // The real process: exits at once with the reason.
    const child = await run(process.execPath, ['--import', 'tsx', join(__dirname, '../../bridge/main.ts')], {
      env: { ...process.env, DELIVERY_WEBHOOK_SECRETS: 'whsec_AB', BRIDGE_PORT: '0', BRIDGE_ADMIN_PORT: '0' },
      timeout: 60_000,
    }).catch((e: { code: number; stderr: string }) => e);
    expect((child as { code: number }).code).toBe(1);
    expect((child as { stderr: string }).stderr).toMatch(/DELIVERY_WEBHOOK_SECRETS.*a webhook secret must be whsec_<base64>/s);
    expect((child as { stderr: string }).stderr).not.toContain('whsec_AB');
  }, 90_000);
});
