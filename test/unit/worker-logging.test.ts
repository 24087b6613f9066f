import type { Logger, LogLevel } from '@temporalio/worker';
import { ExpectedNoticesAtDebug } from '../../worker/logging';

describe("the worker's log on a healthy start", () => {
  it('logs the SDK’s notices about activity-only workers at debug, and every other warning as a warning', () => {
    const seen: [LogLevel, string][] = [];
    const inner = { log: (level: LogLevel, message: string) => seen.push([level, message]) } as Logger;
    const log = new ExpectedNoticesAtDebug(inner);
    log.warn('No workflows registered, not polling for workflow tasks', { taskQueue: 'deliveries.provider-quotes' });
    log.info('No Nexus services registered, not polling for Nexus tasks');
    log.warn('Failing workflow task');
    log.error('Activity failed');
    expect(seen).toEqual([
      ['DEBUG', 'No workflows registered, not polling for workflow tasks'],
      ['DEBUG', 'No Nexus services registered, not polling for Nexus tasks'],
      ['WARN', 'Failing workflow task'],
      ['ERROR', 'Activity failed'],
    ]);
  });
});
