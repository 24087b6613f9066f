/**
 * The bridge's Prometheus metrics, on a Registry of its own: tests run several bridges in one
 * process, and prom-client's global registry refuses a metric name registered twice.
 * Default Node metrics are added by bridge/main.ts only (they are per process, not per bridge).
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { AccountLabels, type AccountList } from '../metrics/account';
import type { ReasonCode, WebhookOutcome } from './outcomes';

/** The `account` label of a webhook to an account the bridge does not serve: not an account id (those never hold parentheses), one value whatever was asked. */
export const UNKNOWN_ACCOUNT_LABEL = '(unknown)';
/** Webhook series present from the start for every account label. */
const FIRST_SERIES = [
  ['accepted', 'signal_delivered'],
  ['duplicate', 'already_delivered'],
  ['workflow_closed', 'workflow_closed'],
] as const;

export class BridgeMetrics {
  readonly registry = new Registry();
  /** The served accounts' labels (metrics/account.ts); refreshed by accountsChanged(). */
  readonly labels: AccountLabels;
  private readonly webhooks: Counter<'outcome' | 'reason' | 'account'>;
  private readonly handling: Histogram<'outcome'>;
  private readonly negativeHits: Counter<'kind'>;
  private readonly suppressedLogLines: Counter;
  private readonly droppedConnections: Counter;
  private readonly cappedRetryAfter: Counter<'account'>;

  constructor(sizes: { referenceCache: () => number; deliveredEvents: () => number; unknownDeliveries: () => number; closedWorkflows: () => number }, accounts: AccountList, namedAccounts?: number) {
    this.labels = new AccountLabels(accounts, namedAccounts);
    const registers = [this.registry];
    this.webhooks = new Counter({
      name: 'bridge_webhooks_total',
      help: 'Webhook requests answered, by courier account (the URL\'s when the bridge serves it, labelled as every metric labels accounts; "(unknown)" otherwise), outcome and reason code.',
      // `account` last: series read as {outcome=…,reason=…} before accounts keep their form.
      labelNames: ['outcome', 'reason', 'account'],
      registers,
    });
    this.seed();
    this.handling = new Histogram({
      name: 'bridge_webhook_handling_seconds',
      help: 'Time from a webhook request arriving to its answer being written, by outcome.',
      labelNames: ['outcome'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    new Gauge({
      name: 'bridge_reference_cache_entries',
      help: 'Delivery ids whose reference number the bridge has cached.',
      registers,
      collect() {
        this.set(sizes.referenceCache());
      },
    });
    this.negativeHits = new Counter({
      name: 'bridge_negative_cache_hits_total',
      help: 'Webhooks answered from the negative cache (unknown delivery, ended workflow) without a provider call, signal or describe.',
      labelNames: ['kind'],
      registers,
    });
    for (const kind of ['unknown_delivery', 'workflow_closed']) this.negativeHits.labels(kind).inc(0);
    this.suppressedLogLines = new Counter({
      name: 'bridge_rejected_log_lines_suppressed_total',
      help: 'Rejected webhook requests not logged because the log rate bound was reached (all are counted in bridge_webhooks_total).',
      registers,
    });
    this.droppedConnections = new Counter({
      name: 'bridge_connections_dropped_total',
      help: 'Connections closed at once because the webhook listener had BRIDGE_MAX_CONNECTIONS open.',
      registers,
    });
    this.cappedRetryAfter = new Counter({
      name: 'bridge_provider_retry_after_capped_total',
      help: 'Provider 429 answers whose Retry-After was over DELIVERY_API_RETRY_AFTER_CAP_MS and was cut to it, by account.',
      labelNames: ['account'],
      registers,
    });
    new Gauge({
      name: 'bridge_negative_cache_entries',
      help: 'Unknown deliveries and ended workflows remembered by the negative cache.',
      labelNames: ['kind'],
      registers,
      collect() {
        this.labels('unknown_delivery').set(sizes.unknownDeliveries());
        this.labels('workflow_closed').set(sizes.closedWorkflows());
      },
    });
    new Gauge({
      name: 'bridge_delivered_event_ids',
      help: 'Event ids remembered as delivered (the duplicate fast path).',
      registers,
      collect() {
        this.set(sizes.deliveredEvents());
      },
    });
  }

  /** Present from the start for every label value, so a dashboard (or a test) reads 0 rather than no series. */
  private seed(): void {
    for (const account of this.labels.values()) for (const [outcome, reason] of FIRST_SERIES) this.webhooks.labels(outcome, reason, account).inc(0);
  }

  /** After a registry reload: new label values get their series, and those no longer used go (at most DELIVERY_METRICS_ACCOUNTS + 2 values). */
  async accountsChanged(): Promise<void> {
    this.labels.refresh();
    const kept = new Set([...this.labels.values(), UNKNOWN_ACCOUNT_LABEL]);
    for (const metric of [this.webhooks, this.cappedRetryAfter] as const) {
      for (const { labels } of (await metric.get()).values) if (typeof labels.account === 'string' && !kept.has(labels.account)) metric.remove(labels as never);
    }
    this.seed();
  }

  /** `account`: a served account's id, undefined for any other (never text a request chose). */
  observe(account: string | undefined, outcome: WebhookOutcome, reason: ReasonCode, seconds: number): void {
    this.webhooks.labels(outcome, reason, account === undefined ? UNKNOWN_ACCOUNT_LABEL : this.labels.of(account)).inc();
    this.handling.labels(outcome).observe(seconds);
  }

  negativeHit(kind: 'unknown_delivery' | 'workflow_closed'): void {
    this.negativeHits.labels(kind).inc();
  }

  suppressedLogLine(): void {
    this.suppressedLogLines.inc();
  }

  /** `account`: the account whose call was answered (the bridge reads deliveries with each account's key). */
  retryAfterCapped(account: string): void {
    this.cappedRetryAfter.labels(this.labels.of(account)).inc();
  }

  droppedConnection(): void {
    this.droppedConnections.inc();
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
