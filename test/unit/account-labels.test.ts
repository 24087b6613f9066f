/**
 * The account label agreement (metrics/account.ts) as the worker's and the bridge's metrics apply
 * it: a registry of any size makes at most DELIVERY_METRICS_ACCOUNTS + 1 label values, the named
 * ones the registry's first by its order, every series present from the start for each, and a
 * reload that renames, adds or removes accounts keeps the bound.
 */
import { AccountLabels, namedAccountsFromEnv, OTHER_ACCOUNTS } from '../../metrics/account';
import { WorkerMetrics, type WorkerAccounts } from '../../metrics/worker-metrics';
import { BridgeMetrics, UNKNOWN_ACCOUNT_LABEL } from '../../bridge/metrics';
import { parsePrometheusText } from '../helpers/prometheus';

/** A registry of these ids, each with an `orders` endpoint; `ids` may be replaced (a reload). */
function accounts(ids: string[]): WorkerAccounts & { set(ids: string[]): void } {
  let now = ids;
  return { ids: () => now, endpointsOf: () => ['orders'], set: (next) => (now = next) };
}

const shops = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `shop-${from + i}`);

/** Every `account` label value of the worker's series. */
async function labelValues(registry: { metrics(): Promise<string> }): Promise<Set<string>> {
  return new Set(
    parsePrometheusText(await registry.metrics())
      .samples.map((s) => s.labels.account)
      .filter((a): a is string => a !== undefined),
  );
}

const sizes = { referenceCache: () => 0, deliveredEvents: () => 0, unknownDeliveries: () => 0, closedWorkflows: () => 0 };

describe('account labels', () => {
  it('names the registry’s first DELIVERY_METRICS_ACCOUNTS accounts by its order and labels the rest _other', () => {
    const labels = new AccountLabels({ ids: () => ['zeta', 'acme', 'beta'] }, 2);
    expect(['zeta', 'acme', 'beta', 'nobody'].map((a) => labels.of(a))).toEqual(['zeta', 'acme', OTHER_ACCOUNTS, OTHER_ACCOUNTS]);
    expect(labels.values()).toEqual(['zeta', 'acme', OTHER_ACCOUNTS]);
  });

  it('reads DELIVERY_METRICS_ACCOUNTS, refusing a bad value by name', () => {
    expect(namedAccountsFromEnv({})).toBe(50);
    expect(namedAccountsFromEnv({ DELIVERY_METRICS_ACCOUNTS: '3' })).toBe(3);
    expect(() => namedAccountsFromEnv({ DELIVERY_METRICS_ACCOUNTS: '-1' })).toThrow('DELIVERY_METRICS_ACCOUNTS: must be 0 or more');
    expect(() => namedAccountsFromEnv({ DELIVERY_METRICS_ACCOUNTS: 'many' })).toThrow(/DELIVERY_METRICS_ACCOUNTS/);
  });

  it('makes at most DELIVERY_METRICS_ACCOUNTS + 1 label values on the worker with 10,000 accounts, each present from the start', async () => {
    const registry = accounts(shops(10_000));
    const metrics = new WorkerMetrics(registry, { namedAccounts: 5 });
    for (const id of registry.ids()) {
      metrics.providerCall({ account: id, family: 'creations', outcome: '2xx', seconds: 0.1 });
      metrics.deliveryStarted(id);
      metrics.attempt({ account: id, endpoint: 'orders', key: `${id}/1`, result: 'retried', nextRetryMs: 1_000 });
    }
    const named = [...shops(5), OTHER_ACCOUNTS];
    expect(await labelValues(metrics.registry)).toEqual(new Set(named));
    const m = parsePrometheusText(await metrics.registry.metrics());
    expect(m.value('delivery_deliveries_started_total', { account: 'shop-0' })).toBe(1);
    expect(m.value('delivery_deliveries_started_total', { account: OTHER_ACCOUNTS })).toBe(9_995);
    expect(m.value('delivery_notifications_pending', { account: OTHER_ACCOUNTS, target: 'endpoint', endpoint: 'orders' })).toBe(9_995);
    // Two accounts' `orders` endpoints are two series.
    expect(m.value('delivery_notifications_total', { account: 'shop-0', target: 'endpoint', endpoint: 'orders', result: 'retried' })).toBe(1);
    expect(m.value('delivery_notifications_total', { account: 'shop-1', target: 'endpoint', endpoint: 'orders', result: 'retried' })).toBe(1);
    // Before any traffic: each label value's series at 0.
    const fresh = parsePrometheusText(await new WorkerMetrics(registry, { namedAccounts: 5 }).registry.metrics());
    for (const account of named) {
      expect(fresh.samples.some((s) => s.name === 'delivery_provider_calls_total' && s.labels.account === account && s.labels.family === 'quotes')).toBe(true);
      expect(fresh.samples.some((s) => s.name === 'delivery_notifications_total' && s.labels.account === account && s.labels.endpoint === 'orders')).toBe(true);
      expect(fresh.samples.some((s) => s.name === 'delivery_deliveries_started_total' && s.labels.account === account)).toBe(true);
    }
  });

  it('keeps the bound across reloads that remove and add accounts, with the new ones named from the reload', async () => {
    const registry = accounts(shops(3));
    const metrics = new WorkerMetrics(registry, { namedAccounts: 3 });
    for (const id of shops(3)) metrics.providerCall({ account: id, family: 'quotes', outcome: '2xx', seconds: 0.1 });
    for (let round = 1; round <= 4; round++) {
      registry.set(shops(3, round * 10)); // three other accounts each time
      await metrics.accountsChanged();
      for (const id of registry.ids()) metrics.providerCall({ account: id, family: 'quotes', outcome: '2xx', seconds: 0.1 });
    }
    expect(await labelValues(metrics.registry)).toEqual(new Set([...shops(3, 40), OTHER_ACCOUNTS]));
    const m = parsePrometheusText(await metrics.registry.metrics());
    expect(m.value('delivery_provider_calls_total', { account: 'shop-40', family: 'quotes', outcome: '2xx' })).toBe(1);
    expect(m.value('delivery_provider_call_seconds_count', { account: 'shop-40', family: 'quotes', outcome: '2xx' })).toBe(1);
  });

  it("labels the bridge's webhooks the same way, with (unknown) for an account it does not serve", async () => {
    const registry = accounts(shops(1_000));
    const metrics = new BridgeMetrics(sizes, registry, 2);
    metrics.observe('shop-0', 'accepted', 'signal_delivered', 0.01);
    metrics.observe('shop-999', 'accepted', 'signal_delivered', 0.01);
    metrics.observe(undefined, 'rejected', 'no_matching_signature', 0.01);
    metrics.retryAfterCapped('shop-999'); // a look-up's Retry-After cut to the cap
    expect(await labelValues(metrics.registry)).toEqual(new Set(['shop-0', 'shop-1', OTHER_ACCOUNTS, UNKNOWN_ACCOUNT_LABEL]));
    const m = parsePrometheusText(await metrics.registry.metrics());
    expect(m.value('bridge_webhooks_total', { outcome: 'accepted', reason: 'signal_delivered', account: OTHER_ACCOUNTS })).toBe(1);
    expect(m.value('bridge_webhooks_total', { outcome: 'accepted', reason: 'signal_delivered', account: 'shop-1' })).toBe(0); // present from the start
    expect(m.value('bridge_provider_retry_after_capped_total', { account: OTHER_ACCOUNTS })).toBe(1);
    registry.set(['acme']);
    await metrics.accountsChanged();
    expect(await labelValues(metrics.registry)).toEqual(new Set(['acme', OTHER_ACCOUNTS, UNKNOWN_ACCOUNT_LABEL]));
  });
});
