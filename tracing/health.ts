/**
 * Whether a process's spans reach the tracing backend: spans exported, failed (the backend refused
 * them or could not be reached) and dropped (the batch queue was full), counted through the span
 * processor's and the exporter's own interfaces for the process's metrics (metrics/trace-spans.ts),
 * and OpenTelemetry's own warnings and errors written as log lines, each kind at most once a minute. Without this, a backend gone away loses every trace
 * silently: OpenTelemetry's SDK reports through `diag`, which writes nothing until given a logger.
 */
import { diag, DiagLogLevel, TraceFlags, type Context, type DiagLogger } from '@opentelemetry/api';
import { ExportResultCode, setGlobalErrorHandler, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, Span, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-node';

export interface SpanCounts {
  exported: number;
  failed: number;
  dropped: number;
}

/** The exporter, counting each batch's spans by its result. */
export class CountingExporter implements SpanExporter {
  /** Told of each batch handed over, so it knows how full the batch processor's queue is. */
  onHandedOver: (n: number) => void = () => undefined;

  constructor(
    private readonly inner: SpanExporter,
    private readonly counts: SpanCounts,
  ) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.onHandedOver(spans.length);
    this.inner.export(spans, (result) => {
      if (result.code === ExportResultCode.SUCCESS) this.counts.exported += spans.length;
      else this.counts.failed += spans.length;
      done(result);
    });
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

/**
 * The span processor, counting the spans it could not queue: the batch processor's queue holds at
 * most `maxQueueSize` spans not yet handed to the exporter, and drops the rest without telling
 * anyone but `diag`. This keeps its own count of them (ended here, not yet given to the exporter,
 * `CountingExporter.export` subtracts them) and drops a span itself, counted, when the queue is
 * full, so the batch processor's queue never overflows. Unsampled spans are not queued: not counted.
 */
export class CountingProcessor implements SpanProcessor {
  private queued = 0;

  constructor(
    private readonly inner: SpanProcessor,
    private readonly maxQueueSize: number,
    private readonly counts: SpanCounts,
  ) {}

  /** Called by the exporter (CountingExporter) when the batch processor hands it `n` spans. */
  handedOver(n: number): void {
    this.queued = Math.max(0, this.queued - n);
  }

  onStart(span: Span, parent: Context): void {
    this.inner.onStart(span, parent);
  }

  onEnd(span: ReadableSpan): void {
    if (!(span.spanContext().traceFlags & TraceFlags.SAMPLED)) return;
    if (this.queued >= this.maxQueueSize) return void this.counts.dropped++;
    this.queued++;
    this.inner.onEnd(span);
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
}

const QUIET_MS = 60_000;

export interface TraceLogLine {
  level: 'WARN' | 'ERROR';
  msg: string;
  /** Lines of the same kind left out since the last one written. */
  repeated?: number;
}

/**
 * Where OpenTelemetry's diagnostics go: its warnings (`diag`) and the errors it hands its global
 * error handler (a failed export), as log lines of at most 300 characters, a kind (the text with
 * its numbers blanked) written at most once a minute with how many were left out. An error is its
 * name, message and code: not the SDK's own rendering, which adds the stack and the backend's answer.
 */
export function traceDiagnostics(log: (line: TraceLogLine) => void, now: () => number = Date.now) {
  const last = new Map<string, { at: number; left: number }>();
  const write = (level: TraceLogLine['level'], text: string) => {
    text = text.slice(0, 300);
    const kind = `${level} ${text.replace(/\d+/g, 'N').slice(0, 80)}`;
    const seen = last.get(kind);
    if (seen && now() - seen.at < QUIET_MS) return void seen.left++;
    last.set(kind, { at: now(), left: 0 });
    log({ level, msg: `traces: ${text}`, ...(seen?.left && { repeated: seen.left }) });
  };
  const none = () => undefined;
  // A message and its string arguments (a partial success's JSON); objects are left out: a line says what happened, not what an object holds.
  const text = (m: string, args: unknown[]) => [m, ...args.filter((a): a is string | number => typeof a === 'string' || typeof a === 'number')].join(' ');
  const logger: DiagLogger = { error: (m, ...a) => write('ERROR', text(m, a)), warn: (m, ...a) => write('WARN', text(m, a)), info: none, debug: none, verbose: none };
  const onError = (err: unknown) => write('ERROR', errorText(err));
  return { logger, onError };
}

function errorText(err: unknown): string {
  if (!(err instanceof Error)) return typeof err === 'string' ? err : 'unknown error';
  const code = (err as { code?: unknown }).code;
  return `${err.name}: ${err.message}${typeof code === 'number' || typeof code === 'string' ? ` (code ${code})` : ''}`;
}

/** Routes this process's OpenTelemetry diagnostics (global: once per process) through `traceDiagnostics`. */
export function installDiagnostics(d: ReturnType<typeof traceDiagnostics>): void {
  diag.setLogger(d.logger, { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true });
  setGlobalErrorHandler(d.onError);
}
