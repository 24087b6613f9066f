// tracing/: OpenTelemetry traces of every process (client, worker, bridge), exported by OTLP when configured.
/**
 * Whether this process exports traces, from OpenTelemetry's standard variables: only when
 * OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set. Unset: no tracer, no
 * interceptor, no header on any message (docs/monitoring.md, "Traces").
 */
import { z } from 'zod';
import { parseEnv } from '../provider/validation';

const url = z.url({ protocol: /^https?$/, message: 'must be an http(s) URL, e.g. http://127.0.0.1:4318' });

const TracingEnvSchema = z.object({
  /** The OTLP/HTTP base address; traces go to <it>/v1/traces. */
  OTEL_EXPORTER_OTLP_ENDPOINT: url.optional(),
  /** OTLP/HTTP traces URL, used as is; wins over OTEL_EXPORTER_OTLP_ENDPOINT. */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: url.optional(),
  OTEL_SERVICE_NAME: z.string().min(1).max(200).optional(),
  /** Read by OpenTelemetry's env detector; checked here because it would drop a malformed list with a warning. */
  OTEL_RESOURCE_ATTRIBUTES: z.string().regex(/^\s*[^=,\s]+\s*=[^,]*(,\s*[^=,\s]+\s*=[^,]*)*$/, 'must be key=value pairs separated by commas').optional(),
  /** `none` turns tracing off whatever the endpoint (OpenTelemetry's standard switch). */
  OTEL_TRACES_EXPORTER: z.enum(['otlp', 'none']).optional(),
  /**
   * Read by OpenTelemetry's SDK itself; checked here because it would only warn and trace
   * everything. `parentbased_traceidratio` decides at a trace's root, where a delivery starts (the
   * order system's client), and every process after follows: a delivery is traced whole or not at all.
   */
  OTEL_TRACES_SAMPLER: z.enum(['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio']).optional(),
  OTEL_TRACES_SAMPLER_ARG: z.coerce.number({ message: 'must be a number from 0 to 1' }).min(0, 'must be a number from 0 to 1').max(1, 'must be a number from 0 to 1').optional(),
});

export interface TracingConfig {
  /** The full traces URL (…/v1/traces). */
  tracesUrl: string;
  serviceName: string;
}

/** The process's tracing, or undefined when it exports none. `service`: its name unless OTEL_SERVICE_NAME says otherwise. */
export function tracingConfigFromEnv(service: string, env: NodeJS.ProcessEnv = process.env): TracingConfig | undefined {
  const e = parseEnv(TracingEnvSchema, env, 'tracing configuration');
  if (e.OTEL_TRACES_EXPORTER === 'none') return undefined;
  const tracesUrl = e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (e.OTEL_EXPORTER_OTLP_ENDPOINT ? `${e.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces` : undefined);
  return tracesUrl ? { tracesUrl, serviceName: e.OTEL_SERVICE_NAME ?? service } : undefined;
}
