/**
 * What a traced workflow bundle evaluates once per worker thread rather than once per workflow
 * run (tracing/worker.ts, WORKFLOW_TRACING_PRELOAD): OpenTelemetry's semantic conventions, which
 * the SDK's workflow tracer provider imports. Re-exported, not just imported: the package says it
 * has no side effects, so a bare import of it would be dropped from the bundle.
 */
export * from '@opentelemetry/semantic-conventions';
