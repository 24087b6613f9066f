/**
 * Keeps the Temporal worker's INFO chatter out of test output; warnings and errors still show,
 * except the SDK's notice, once per worker, that an activity-only worker polls no workflow tasks
 * (every test stack has several): expected, so at DEBUG as in the worker process (worker/logging.ts).
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { ExpectedNoticesAtDebug } from '../../worker/logging';

try {
  Runtime.install({ logger: new ExpectedNoticesAtDebug(new DefaultLogger('WARN')) });
} catch {
  // Already installed by an earlier test file in this jest worker process.
}
