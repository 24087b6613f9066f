/**
 * The worker's own Prometheus metrics (the Temporal SDK's, task latencies, slots and polls, are
 * served by the runtime's exporter on WORKER_METRICS_ADDRESS). A Registry of its own, as the
 * bridge's (bridge/metrics.ts): tests run several workers in one process. Every label is bounded:
 * `account` (metrics/account.ts), a call family, an outcome class, a target kind, and an endpoint
 * name from the operator's configuration; never an order's data or a workflow ID.
 * Workflow code never touches these: they are counted where the work happens, in activities and
 * in the provider client, and a delivery's signals to its order workflow through the workflow's
 * `notifications` sink (worker/worker.ts), which the SDK does not call on replay: nothing twice.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { CallFamily } from '../provider/limits';
import { AccountLabels, type AccountList } from './account';

/** A provider answer, classed: the statuses the contract gives a meaning to, the rest by class. */
export const PROVIDER_OUTCOMES = ['2xx', '401', '404', '409', '422', '429', '4xx', '5xx', 'timeout', 'network'] as const;
export type ProviderOutcome = (typeof PROVIDER_OUTCOMES)[number];

export function providerOutcome(status: number | 'timeout' | 'network'): ProviderOutcome {
  if (typeof status !== 'number') return status;
  if (status >= 200 && status < 300) return '2xx';
  const exact = PROVIDER_OUTCOMES.find((o) => o === String(status));
  if (exact) return exact;
  return status >= 500 ? '5xx' : '4xx';
}

export interface ProviderCallObserver {
  (call: { account: string; family: CallFamily; outcome: ProviderOutcome; seconds: number }): void;
}

export type NotificationResult = 'sent' | 'retried' | 'failed';
/** The target kinds of a notification: an operator's HTTP endpoint (by activity), an order workflow (by signal). */
export const NOTIFICATION_TARGETS = ['endpoint', 'workflow'] as const;
export type NotificationTarget = (typeof NOTIFICATION_TARGETS)[number];
/** The `endpoint` label of a signal to an order workflow: its workflow ID is an order's data, never a label. */
export const SIGNAL_ENDPOINT = '(signal)';

/** One attempt: the notify activity's (an endpoint), or a signal's, reported by the delivery workflow through its sink (workflows/notifier.ts). */
export interface NotificationAttempt {
  /** The delivery's account (its workflow ID's). */
  account: string;
  target?: NotificationTarget;
  endpoint: string;
  key: string;
  result: NotificationResult;
  nextRetryMs?: number;
}

export interface NotificationObserver {
  attempt(o: NotificationAttempt): void;
}

const FAMILIES: readonly CallFamily[] = ['creations', 'quotes', 'other'];
/** A notification left waiting for its retry is forgotten this long after that retry was due (it ran on another worker). */
const PENDING_GRACE_MS = 60_000;

/** What the worker's metrics need of its accounts: their ids in the registry's order, and each one's notification endpoints. */
export interface WorkerAccounts extends AccountList {
  endpointsOf(account: string): Iterable<string>;
}

export class WorkerMetrics implements NotificationObserver {
  readonly registry = new Registry();
  /** Every account's label (metrics/account.ts); refreshed by accountsChanged(). */
  readonly labels: AccountLabels;
  private readonly calls: Counter<'account' | 'family' | 'outcome'>;
  private readonly callSeconds: Histogram<'account' | 'family' | 'outcome'>;
  private readonly cappedRetryAfter: Counter<'account'>;
  private readonly notifications: Counter<'account' | 'target' | 'endpoint' | 'result'>;
  private readonly started: Counter<'account'>;
  private readonly refused: Counter<'account'>;
  /** Notifications whose last attempt here failed and will be retried: key → its label and when to forget it. */
  private readonly pending = new Map<string, { account: string; target: NotificationTarget; endpoint: string; until: number }>();
  /** The pending gauge's series present from the start: label value → target kind → endpoints. */
  private series = new Map<string, [NotificationTarget, string][]>();

  constructor(
    private readonly accounts: WorkerAccounts,
    o: { now?: () => number; namedAccounts?: number } = {},
  ) {
    this.now = o.now ?? Date.now;
    this.labels = new AccountLabels(accounts, o.namedAccounts);
    const registers = [this.registry];
    this.calls = new Counter({ name: 'delivery_provider_calls_total', help: 'Calls to the courier API by account, call family and outcome (2xx, 401, 404, 409, 422, 429, other 4xx, 5xx, timeout, network).', labelNames: ['account', 'family', 'outcome'], registers });
    this.callSeconds = new Histogram({
      name: 'delivery_provider_call_seconds',
      help: 'Time from a courier API request to its answer read (or its failure), by account, call family and outcome.',
      labelNames: ['account', 'family', 'outcome'],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.cappedRetryAfter = new Counter({ name: 'delivery_provider_retry_after_capped_total', help: 'Provider 429 answers whose Retry-After was over DELIVERY_API_RETRY_AFTER_CAP_MS and was cut to it, by account.', labelNames: ['account'], registers });
    this.notifications = new Counter({
      name: 'delivery_notifications_total',
      help: 'Notification attempts by account, target kind (endpoint: HTTP; workflow: a signal to an order workflow, endpoint (signal)), endpoint and result: sent, retried (failed, another attempt scheduled), failed (no more attempts).',
      labelNames: ['account', 'target', 'endpoint', 'result'],
      registers,
    });
    const { pending, now } = this;
    const series = () => this.series;
    new Gauge({
      name: 'delivery_notifications_pending',
      help: "Notifications whose last attempt on this worker failed and whose retry is scheduled, by account, target kind (endpoint, workflow) and endpoint ((signal) for an order workflow's).",
      labelNames: ['account', 'target', 'endpoint'],
      registers,
      collect() {
        const t = now();
        // Every series present from the start at 0, then the pending ones counted.
        const counts = new Map<string, { labels: [string, NotificationTarget, string]; n: number }>();
        const add = (labels: [string, NotificationTarget, string], n: number) => {
          const k = labels.join('\n');
          counts.set(k, { labels, n: (counts.get(k)?.n ?? 0) + n });
        };
        for (const [account, pairs] of series()) for (const [target, endpoint] of pairs) add([account, target, endpoint], 0);
        for (const [k, p] of pending) {
          if (p.until < t) pending.delete(k);
          else add([p.account, p.target, p.endpoint], 1);
        }
        this.reset();
        for (const { labels, n } of counts.values()) this.labels(...labels).set(n);
      },
    });
    this.started = new Counter({ name: 'delivery_deliveries_started_total', help: 'Deliveries started, by account (their first run read the worker settings; a continued run is not counted again).', labelNames: ['account'], registers });
    this.refused = new Counter({ name: 'delivery_starts_refused_total', help: "Delivery starts refused by the worker's start check, by the account they named (an unknown one: _other). Each is also a failed delivery workflow (InvalidDeliveryInput) in temporal_workflow_failed.", labelNames: ['account'], registers });
    this.seed();
  }

  private readonly now: () => number;

  /**
   * Present from the start, for every label value, so a dashboard or an alert reads 0 rather than
   * no series: each family's 2xx calls, capped Retry-Afters, starts, and each endpoint's
   * notifications (an account's own; `_other`'s: every endpoint name its accounts have) and signals.
   */
  private seed(): void {
    const series = new Map<string, [NotificationTarget, string][]>();
    for (const account of this.labels.values()) series.set(account, [['workflow', SIGNAL_ENDPOINT]]);
    for (const id of this.accounts.ids()) {
      const pairs = series.get(this.labels.of(id))!;
      for (const endpoint of this.accounts.endpointsOf(id)) if (!pairs.some(([t, e]) => t === 'endpoint' && e === endpoint)) pairs.push(['endpoint', endpoint]);
    }
    this.series = series;
    for (const account of this.labels.values()) {
      for (const family of FAMILIES) this.calls.labels(account, family, '2xx').inc(0);
      this.cappedRetryAfter.labels(account).inc(0);
      this.started.labels(account).inc(0);
      this.refused.labels(account).inc(0);
      for (const [target, endpoint] of series.get(account)!) for (const result of ['sent', 'retried', 'failed'] as const) this.notifications.labels(account, target, endpoint, result).inc(0);
    }
  }

  /**
   * After a registry reload: accounts named anew get their series, and the series of a label
   * value no longer used (an account removed, or moved past DELIVERY_METRICS_ACCOUNTS) go, so the
   * values stay at most DELIVERY_METRICS_ACCOUNTS + 1 however often the registry changes.
   */
  async accountsChanged(): Promise<void> {
    this.labels.refresh();
    const kept = new Set(this.labels.values());
    for (const metric of [this.calls, this.callSeconds, this.cappedRetryAfter, this.notifications, this.started, this.refused] as const) {
      for (const { labels } of (await metric.get()).values) if (typeof labels.account === 'string' && !kept.has(labels.account)) (metric as Counter<string>).remove(withoutBucket(labels));
    }
    for (const [k, p] of this.pending) if (!kept.has(p.account)) this.pending.set(k, { ...p, account: this.labels.of(p.account) });
    this.seed();
  }

  readonly providerCall: ProviderCallObserver = ({ account, family, outcome, seconds }) => {
    const label = this.labels.of(account);
    this.calls.labels(label, family, outcome).inc();
    this.callSeconds.labels(label, family, outcome).observe(seconds);
  };

  retryAfterCapped(account: string): void {
    this.cappedRetryAfter.labels(this.labels.of(account)).inc();
  }

  deliveryStarted(account: string): void {
    this.started.labels(this.labels.of(account)).inc();
  }

  startRefused(account: string): void {
    this.refused.labels(this.labels.of(account)).inc();
  }

  attempt({ account, target = 'endpoint', endpoint, key, result, nextRetryMs }: NotificationAttempt): void {
    const label = this.labels.of(account);
    this.notifications.labels(label, target, endpoint, result).inc();
    if (result === 'retried') this.pending.set(key, { account: label, target, endpoint, until: this.now() + (nextRetryMs ?? 0) + PENDING_GRACE_MS });
    else this.pending.delete(key);
  }
}

/** A histogram's series are listed per bucket (`le`) and as _sum/_count: its labels without `le` name the series. */
function withoutBucket(labels: Record<string, string | number>): Record<string, string | number> {
  const { le: _le, ...rest } = labels;
  return rest;
}
