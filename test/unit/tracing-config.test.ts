/** Traces are exported only when OpenTelemetry's standard variables say where, and a wrong value names the variable. */
import { tracingConfigFromEnv } from '../../tracing/config';
import { routeOf } from '../../tracing/install';

describe('tracingConfigFromEnv', () => {
  it('is off with no OTLP endpoint, and with OTEL_TRACES_EXPORTER=none', () => {
    expect(tracingConfigFromEnv('delivery-worker', {})).toBeUndefined();
    expect(tracingConfigFromEnv('delivery-worker', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_TRACES_EXPORTER: 'none' })).toBeUndefined();
  });

  it('sends to <endpoint>/v1/traces, or to the traces endpoint as given, under the service name asked for', () => {
    expect(tracingConfigFromEnv('delivery-worker', { OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otlp.example.com/' })).toEqual({ tracesUrl: 'https://otlp.example.com/v1/traces', serviceName: 'delivery-worker' });
    expect(
      tracingConfigFromEnv('delivery-bridge', { OTEL_EXPORTER_OTLP_ENDPOINT: 'https://a.example.com', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://b.example.com/otlp/traces', OTEL_SERVICE_NAME: 'bridge-eu' }),
    ).toEqual({ tracesUrl: 'https://b.example.com/otlp/traces', serviceName: 'bridge-eu' });
  });

  it('refuses an endpoint that is not an http(s) URL, naming the variable', () => {
    expect(() => tracingConfigFromEnv('delivery-worker', { OTEL_EXPORTER_OTLP_ENDPOINT: 'grpc://collector:4317' })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT.*http\(s\) URL/);
  });

  it('refuses a sampler OpenTelemetry does not know, or a ratio outside 0..1, naming the variable (its SDK would trace everything)', () => {
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' };
    expect(() => tracingConfigFromEnv('delivery-worker', { ...on, OTEL_TRACES_SAMPLER: 'parentbased_ratio' })).toThrow(/OTEL_TRACES_SAMPLER/);
    expect(() => tracingConfigFromEnv('delivery-worker', { ...on, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '10%' })).toThrow(/OTEL_TRACES_SAMPLER_ARG: must be a number from 0 to 1/);
    expect(() => tracingConfigFromEnv('delivery-worker', { ...on, OTEL_TRACES_SAMPLER_ARG: '1.5' })).toThrow(/OTEL_TRACES_SAMPLER_ARG: must be a number from 0 to 1/);
    expect(tracingConfigFromEnv('delivery-worker', { ...on, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' })).toBeDefined();
    expect(() => tracingConfigFromEnv('delivery-worker', { ...on, OTEL_RESOURCE_ATTRIBUTES: 'prod' })).toThrow(/OTEL_RESOURCE_ATTRIBUTES: must be key=value pairs/);
    expect(tracingConfigFromEnv('delivery-worker', { ...on, OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,team=ops' })).toBeDefined();
  });
});

describe('routeOf', () => {
  it('names a courier call by its route, without ids or query', () => {
    expect(routeOf('/v1/deliveries/dlv_123/actions/cancel')).toBe('/v1/deliveries/{id}/actions/cancel');
    expect(routeOf('/v1/deliveries?reference_number=ORD-1&page_size=1')).toBe('/v1/deliveries');
    expect(routeOf('/v1/orders/ord_9')).toBe('/v1/orders/{id}');
    expect(routeOf('/v1/quotes')).toBe('/v1/quotes');
    expect(routeOf('/sandbox/v1/deliveries/dlv_1')).toBe('/sandbox/v1/deliveries/{id}');
  });
});
