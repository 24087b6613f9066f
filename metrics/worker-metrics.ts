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
import { metricsAccount } from './account';

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
  (call: { account?: string; family: CallFamily; outcome: ProviderOutcome; seconds: number }): void;
}

export type NotificationResult = 'sent' | 'retried' | 'failed';
/** The target kinds of a notification: an operator's HTTP endpoint (by activity), an order workflow (by signal). */
export const NOTIFICATION_TARGETS = ['endpoint', 'workflow'] as const;
export type NotificationTarget = (typeof NOTIFICATION_TARGETS)[number];
/** The `endpoint` label of a signal to an order workflow: its workflow ID is an order's data, never a label. */
export const SIGNAL_ENDPOINT = '(signal)';

/** One attempt: the notify activity's (an endpoint), or a signal's, reported by the delivery workflow through its sink (workflows/notifier.ts). */
export interface NotificationAttempt {
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

export class WorkerMetrics implements NotificationObserver {
  readonly registry = new Registry();
  private readonly calls: Counter<'account' | 'family' | 'outcome'>;
  private readonly callSeconds: Histogram<'account' | 'family' | 'outcome'>;
  private readonly cappedRetryAfter: Counter<'account'>;
  private readonly notifications: Counter<'account' | 'target' | 'endpoint' | 'result'>;
  private readonly started: Counter<'account'>;
  /** Notifications whose last attempt here failed and will be retried: key → when to forget it. */
  private readonly pending = new Map<string, { target: NotificationTarget; endpoint: string; until: number }>();

  constructor(o: { endpoints: readonly string[]; now?: () => number }) {
    const now = o.now ?? Date.now;
    const registers = [this.registry];
    const account = metricsAccount();
    this.calls = new Counter({ name: 'delivery_provider_calls_total', help: 'Calls to the courier API by call family and outcome (2xx, 401, 404, 409, 422, 429, other 4xx, 5xx, timeout, network).', labelNames: ['account', 'family', 'outcome'], registers });
    this.callSeconds = new Histogram({
      name: 'delivery_provider_call_seconds',
      help: 'Time from a courier API request to its answer read (or its failure), by call family and outcome.',
      labelNames: ['account', 'family', 'outcome'],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.cappedRetryAfter = new Counter({ name: 'delivery_provider_retry_after_capped_total', help: 'Provider 429 answers whose Retry-After was over DELIVERY_API_RETRY_AFTER_CAP_MS and was cut to it.', labelNames: ['account'], registers });
    this.notifications = new Counter({
      name: 'delivery_notifications_total',
      help: 'Notification attempts by target kind (endpoint: HTTP; workflow: a signal to an order workflow, endpoint (signal)), endpoint and result: sent, retried (failed, another attempt scheduled), failed (no more attempts).',
      labelNames: ['account', 'target', 'endpoint', 'result'],
      registers,
    });
    const pending = this.pending;
    // Present from the start: each endpoint's series, and the signals'.
    const series: [NotificationTarget, string][] = [...o.endpoints.map((e): [NotificationTarget, string] => ['endpoint', e]), ['workflow', SIGNAL_ENDPOINT]];
    new Gauge({
      name: 'delivery_notifications_pending',
      help: "Notifications whose last attempt on this worker failed and whose retry is scheduled, by target kind (endpoint, workflow) and endpoint ((signal) for an order workflow's).",
      labelNames: ['account', 'target', 'endpoint'],
      registers,
      collect() {
        const t = now();
        // Target kind → endpoint → pending count; every series of `series` reported, at 0 when none.
        const by = new Map(NOTIFICATION_TARGETS.map((target) => [target, new Map<string, number>()]));
        for (const [target, endpoint] of series) by.get(target)!.set(endpoint, 0);
        for (const [k, p] of pending) {
          const endpoints = by.get(p.target)!;
          if (p.until < t) pending.delete(k);
          else endpoints.set(p.endpoint, (endpoints.get(p.endpoint) ?? 0) + 1);
        }
        for (const [target, endpoints] of by) for (const [endpoint, n] of endpoints) this.labels(account, target, endpoint).set(n);
      },
    });
    this.started = new Counter({ name: 'delivery_deliveries_started_total', help: 'Deliveries started (their first run read the worker settings; a continued run is not counted again).', labelNames: ['account'], registers });
    // Present from the start, so a dashboard or an alert reads 0 rather than no series.
    for (const family of FAMILIES) this.calls.labels(account, family, '2xx').inc(0);
    this.cappedRetryAfter.labels(account).inc(0);
    this.started.labels(account).inc(0);
    for (const [target, endpoint] of series) for (const result of ['sent', 'retried', 'failed'] as const) this.notifications.labels(account, target, endpoint, result).inc(0);
    this.now = now;
  }

  private readonly now: () => number;

  readonly providerCall: ProviderCallObserver = ({ account = metricsAccount(), family, outcome, seconds }) => {
    this.calls.labels(account, family, outcome).inc();
    this.callSeconds.labels(account, family, outcome).observe(seconds);
  };

  retryAfterCapped(): void {
    this.cappedRetryAfter.labels(metricsAccount()).inc();
  }

  deliveryStarted(): void {
    this.started.labels(metricsAccount()).inc();
  }

  attempt({ target = 'endpoint', endpoint, key, result, nextRetryMs }: NotificationAttempt): void {
    this.notifications.labels(metricsAccount(), target, endpoint, result).inc();
    if (result === 'retried') this.pending.set(key, { target, endpoint, until: this.now() + (nextRetryMs ?? 0) + PENDING_GRACE_MS });
    else this.pending.delete(key);
  }
}
