import type { Logger, LogLevel, LogMetadata } from '@temporalio/worker';

/**
 * The SDK notes, once per worker, that it polls no workflow tasks (a warning) or no Nexus tasks.
 * The provider-call workers are activity-only and only the workflow worker serves Nexus, by design: on a healthy
 * start those notices are debug.
 */
/**
 * The SDK core's own log lines (Rust), forwarded to the runtime's logger instead of printed to
 * stderr in core's format: one format per process, and a test's lines held back with its output.
 */
export const CORE_LOGS_FORWARDED = { filter: { core: 'WARN', other: 'ERROR' }, forward: {} } as const;

export class ExpectedNoticesAtDebug implements Logger {
  constructor(private readonly inner: Logger) {}
  log(level: LogLevel, message: string, meta?: LogMetadata): void {
    const expected = message.startsWith('No workflows registered') || message.startsWith('No Nexus services registered');
    this.inner.log(expected ? 'DEBUG' : level, message, meta);
  }
  trace = (message: string, meta?: LogMetadata) => this.log('TRACE', message, meta);
  debug = (message: string, meta?: LogMetadata) => this.log('DEBUG', message, meta);
  info = (message: string, meta?: LogMetadata) => this.log('INFO', message, meta);
  warn = (message: string, meta?: LogMetadata) => this.log('WARN', message, meta);
  error = (message: string, meta?: LogMetadata) => this.log('ERROR', message, meta);
}
