/**
 * The bridge's Prometheus metrics, on a Registry of its own: tests run several bridges in one
 * process, and prom-client's global registry refuses a metric name registered twice.
 * Default Node metrics are added by bridge/main.ts only (they are per process, not per bridge).
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ReasonCode, WebhookOutcome } from './outcomes';

export class BridgeMetrics {
  readonly registry = new Registry();
  private readonly webhooks: Counter<'outcome' | 'reason'>;
  private readonly handling: Histogram<'outcome'>;

  constructor(sizes: { referenceCache: () => number; deliveredEvents: () => number }) {
    const registers = [this.registry];
    this.webhooks = new Counter({
      name: 'bridge_webhooks_total',
      help: 'Webhook requests answered, by outcome and reason code.',
      labelNames: ['outcome', 'reason'],
      registers,
    });
    // Present from the start, so a dashboard (or a test) reads 0 rather than no series.
    for (const [outcome, reason] of [
      ['accepted', 'signal_delivered'],
      ['duplicate', 'already_delivered'],
      ['workflow_closed', 'workflow_closed'],
    ] as const) {
      this.webhooks.labels(outcome, reason).inc(0);
    }
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
    new Gauge({
      name: 'bridge_delivered_event_ids',
      help: 'Event ids remembered as delivered (the duplicate fast path).',
      registers,
      collect() {
        this.set(sizes.deliveredEvents());
      },
    });
  }

  observe(outcome: WebhookOutcome, reason: ReasonCode, seconds: number): void {
    this.webhooks.labels(outcome, reason).inc();
    this.handling.labels(outcome).observe(seconds);
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
