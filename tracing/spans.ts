/**
 * Spans of our own where no interceptor makes one: each HTTP call to the provider (a CLIENT span
 * whose context goes out as W3C `traceparent`) and each webhook the bridge serves (a SERVER span,
 * child of the courier's `traceparent` when it sends one). Attributes are methods, routes,
 * statuses and workflow IDs: never a body, a header's value, a key or personal data.
 * Without tracing installed (tracing/install.ts) each helper calls through at once.
 */
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';
import { activeTracing } from './install';

const tracer = () => trace.getTracer('delivery-orchestrator');

/** A path with its ids replaced: /v1/deliveries/{id}/actions/cancel (a span name of bounded cardinality). */
export function routeOf(path: string): string {
  return path.split('?')[0]!.replace(/^(\/v1\/(?:deliveries|orders))\/[^/]+/, '$1/{id}');
}

/**
 * One HTTP call as a CLIENT span; `send` gets the headers with `traceparent` added. The span ends
 * with the answer's status (`status` of the result or of the error thrown).
 */
export async function httpClientSpan<T extends { status: number }>(method: string, path: string, server: URL, headers: Record<string, string>, send: (headers: Record<string, string>) => Promise<T>): Promise<T> {
  if (!activeTracing()) return send(headers);
  const route = routeOf(path);
  const attributes: Attributes = { 'http.request.method': method, 'http.route': route, 'server.address': server.hostname, 'server.port': Number(server.port) || (server.protocol === 'https:' ? 443 : 80) };
  return tracer().startActiveSpan(`${method} ${route}`, { kind: SpanKind.CLIENT, attributes }, async (span) => {
    const carrier: Record<string, string> = { ...headers };
    propagation.inject(context.active(), carrier);
    try {
      const result = await send(carrier);
      span.setAttribute('http.response.status_code', result.status);
      return result;
    } catch (err) {
      const status = (err as { status?: unknown }).status;
      if (typeof status === 'number') span.setAttribute('http.response.status_code', status);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).name });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** One request served, as a SERVER span, child of the caller's `traceparent` if it sent one. */
export async function httpServerSpan<T>(name: string, headers: Record<string, string | string[] | undefined>, serve: (span: Span | undefined) => Promise<T>): Promise<T> {
  if (!activeTracing()) return serve(undefined);
  const parent = propagation.extract(context.active(), headers);
  return tracer().startActiveSpan(name, { kind: SpanKind.SERVER }, parent, async (span) => {
    try {
      return await serve(span);
    } finally {
      span.end();
    }
  });
}

/** `trace_id` of the active span, for a log line (empty without one). */
export function traceFields(): { trace_id?: string } {
  const ctx = trace.getActiveSpan()?.spanContext();
  return ctx && trace.isSpanContextValid(ctx) ? { trace_id: ctx.traceId } : {};
}

/**
 * The active span's context as a W3C `traceparent`, to carry in a message that has no headers;
 * also where spans are suppressed (a local activity: tracing/worker.ts), which `inject` would honour.
 */
export function activeTraceparent(): string | undefined {
  const active = trace.getSpanContext(context.active()); // none without tracing installed: no context manager, no span
  if (!active) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(trace.setSpanContext(ROOT_CONTEXT, active), carrier);
  return carrier.traceparent;
}
