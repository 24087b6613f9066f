/**
 * `trace_spans_total{outcome}`: a process's spans exported to the tracing backend, failed (refused
 * or unreachable) and dropped (its batch queue full), from tracing/health.ts. The same name in the
 * worker and the bridge: one idea, told apart by the scrape's job. Registered only where tracing is on.
 */
import { Counter, type Registry } from 'prom-client';
import type { SpanCounts } from '../tracing/health';

const OUTCOMES = ['exported', 'failed', 'dropped'] as const;

export function countTraceSpans(registry: Registry, spans: Readonly<SpanCounts>): void {
  const reported: SpanCounts = { exported: 0, failed: 0, dropped: 0 };
  new Counter({
    name: 'trace_spans_total',
    help: 'Spans this process sent to the tracing backend by outcome: exported, failed (the backend refused them or could not be reached), dropped (the batch queue was full).',
    labelNames: ['outcome'],
    registers: [registry],
    collect() {
      for (const outcome of OUTCOMES) {
        this.labels(outcome).inc(spans[outcome] - reported[outcome]); // 0 until the first: every series present
        reported[outcome] = spans[outcome];
      }
    },
  });
}
