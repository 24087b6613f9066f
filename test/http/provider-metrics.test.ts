/**
 * The worker's provider-call metrics (metrics/worker-metrics.ts) as the worker wires them: a real
 * ProviderClient against the real simulator (and a listener that never answers), every call
 * counted once by family and outcome class, with its latency, and nothing else in the labels.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ProviderClient } from '../../provider/client';
import { createSimulator, type Simulator } from '../../simulator/server';
import { providerOutcome, SIGNAL_ENDPOINT, WorkerMetrics } from '../../metrics/worker-metrics';
import { deliveryRequest } from '../fixtures/orders';
import { parsePrometheusText } from '../helpers/prometheus';
import { rejectionOf } from '../helpers/rejection';
import { defaultAccountOnly } from '../helpers/workers';

let sim: Simulator;
let simUrl: string;
let silent: Server;
let silentUrl: string;
const clients: ProviderClient[] = [];

beforeAll(async () => {
  sim = createSimulator({ rateLimits: { quotes: { limit: 1 } } });
  ({ url: simUrl } = await sim.listen(0, '127.0.0.1'));
  silent = createServer(() => undefined); // takes the request, never answers
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  silent.closeAllConnections();
  await new Promise((r) => silent.close(r));
  await sim.close();
});

function client(metrics: WorkerMetrics, baseUrl: string, apiKey = 'sandbox-key', timeoutMs = 5_000): ProviderClient {
  const c = new ProviderClient({ baseUrl, apiKey, timeoutMs, onCall: ({ family, status, seconds }) => metrics.providerCall({ account: 'default', family, outcome: providerOutcome(status), seconds }) });
  clients.push(c);
  return c;
}

describe('provider call metrics', () => {
  it('counts each call by family and outcome, with its latency', async () => {
    const metrics = new WorkerMetrics(defaultAccountOnly());
    const ok = client(metrics, simUrl);
    await ok.quote(deliveryRequest());
    expect(await rejectionOf(ok.quote(deliveryRequest()))).toMatchObject({ status: 429 }); // the limit is 1
    expect(await rejectionOf(ok.getDelivery('dlv_missing'))).toMatchObject({ status: 404 });
    expect(await rejectionOf(client(metrics, simUrl, 'wrong-key').getDelivery('dlv_x'))).toMatchObject({ status: 401 });
    await rejectionOf(client(metrics, silentUrl, 'sandbox-key', 200).getDelivery('dlv_x'));
    await rejectionOf(client(metrics, 'http://127.0.0.1:1').getDelivery('dlv_x'));

    const m = parsePrometheusText(await metrics.registry.metrics());
    const calls = m.samples.filter((s) => s.name === 'delivery_provider_calls_total' && s.value > 0).map((s) => s.labels);
    expect(calls).toEqual(
      expect.arrayContaining([
        { account: 'default', family: 'quotes', outcome: '2xx' },
        { account: 'default', family: 'quotes', outcome: '429' },
        { account: 'default', family: 'other', outcome: '404' },
        { account: 'default', family: 'other', outcome: '401' },
        { account: 'default', family: 'other', outcome: 'timeout' },
        { account: 'default', family: 'other', outcome: 'network' },
      ]),
    );
    expect(m.sum('delivery_provider_calls_total')).toBe(6);
    expect(m.value('delivery_provider_call_seconds_count', { account: 'default', family: 'quotes', outcome: '2xx' })).toBe(1);
    expect(m.value('delivery_provider_call_seconds_sum', { account: 'default', family: 'other', outcome: 'timeout' })).toBeGreaterThanOrEqual(0.2);
  });

  it('classes every status into a bounded set', () => {
    expect([200, 201, 400, 401, 403, 404, 409, 422, 429, 500, 503].map((s) => providerOutcome(s))).toEqual(['2xx', '2xx', '4xx', '401', '4xx', '404', '409', '422', '429', '5xx', '5xx']);
  });
});

describe('notification metrics', () => {
  it('counts attempts by endpoint and result, and a notification pending its retry until it is sent or its retry is long past', async () => {
    let now = 1_000_000;
    const metrics = new WorkerMetrics(defaultAccountOnly(['orders']), { now: () => now });
    metrics.attempt({ account: 'default', endpoint: 'orders', key: 'wf-1/1', result: 'retried', nextRetryMs: 5_000 });
    metrics.attempt({ account: 'default', endpoint: 'orders', key: 'wf-2/1', result: 'retried', nextRetryMs: 5_000 });
    let m = parsePrometheusText(await metrics.registry.metrics());
    expect(m.value('delivery_notifications_pending', { account: 'default', target: 'endpoint', endpoint: 'orders' })).toBe(2);
    metrics.attempt({ account: 'default', endpoint: 'orders', key: 'wf-1/1', result: 'sent' });
    m = parsePrometheusText(await metrics.registry.metrics());
    expect(m.value('delivery_notifications_pending', { account: 'default', target: 'endpoint', endpoint: 'orders' })).toBe(1);
    expect(m.value('delivery_notifications_total', { account: 'default', target: 'endpoint', endpoint: 'orders', result: 'retried' })).toBe(2);
    expect(m.value('delivery_notifications_total', { account: 'default', target: 'endpoint', endpoint: 'orders', result: 'sent' })).toBe(1);
    now += 5_000 + 61_000; // its retry ran elsewhere: forgotten here
    m = parsePrometheusText(await metrics.registry.metrics());
    expect(m.value('delivery_notifications_pending', { account: 'default', target: 'endpoint', endpoint: 'orders' })).toBe(0);
  });

  it('counts signals to order workflows by their own target kind, never by the order workflow, from the start', async () => {
    const metrics = new WorkerMetrics(defaultAccountOnly(['orders']));
    const signal = { target: 'workflow', endpoint: SIGNAL_ENDPOINT } as const;
    let m = parsePrometheusText(await metrics.registry.metrics());
    expect(m.samples.filter((s) => s.name === 'delivery_notifications_total' && s.labels.account === 'default' && s.labels.target === 'workflow').map((s) => [s.labels.result, s.value])).toEqual([
      ['sent', 0],
      ['retried', 0],
      ['failed', 0],
    ]);
    metrics.attempt({ account: 'default', ...signal, key: 'delivery:A/workflow:order:A', result: 'retried', nextRetryMs: 1_000 });
    m = parsePrometheusText(await metrics.registry.metrics());
    expect(m.value('delivery_notifications_pending', { account: 'default', ...signal })).toBe(1);
    expect(m.value('delivery_notifications_pending', { account: 'default', target: 'endpoint', endpoint: 'orders' })).toBe(0);
    metrics.attempt({ account: 'default', ...signal, key: 'delivery:A/workflow:order:A', result: 'sent' });
    m = parsePrometheusText(await metrics.registry.metrics());
    expect(m.value('delivery_notifications_pending', { account: 'default', ...signal })).toBe(0);
    expect(m.value('delivery_notifications_total', { account: 'default', ...signal, result: 'sent' })).toBe(1);
    expect(m.sum('delivery_notifications_total', { target: 'endpoint' })).toBe(0);
  });
});
