/** Keeps the Temporal worker's INFO chatter out of test output; warnings and errors still show. */
import { DefaultLogger, Runtime } from '@temporalio/worker';

try {
  Runtime.install({ logger: new DefaultLogger('WARN') });
} catch {
  // Already installed by an earlier test file in this jest worker process.
}
