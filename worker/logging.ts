import type { LogExporterConfig, Logger, LogLevel, LogMetadata } from '@temporalio/worker';

/** The SDK core's own warnings (a workflow task failed, a task gone) through the runtime's logger, not printed to the console as coloured text. */
export const FORWARDED_CORE_LOGS: LogExporterConfig = { filter: { core: 'WARN', other: 'ERROR' }, forward: {} };

/**
 * The SDK notes, once per worker, that it polls no workflow tasks (a warning) or no Nexus tasks.
 * The provider-call workers are activity-only and only the workflow worker serves Nexus, by design: on a healthy
 * start those notices are debug.
 */
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
