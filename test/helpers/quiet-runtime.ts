/**
 * The Temporal runtime of a test file (a setup file: jest loads it, and the SDK, afresh for each):
 * no INFO chatter; its warnings and errors (an activity's failure, a slow workflow task) go to the
 * test under way, which test/helpers/quiet-environment.js prints only if it fails. The SDK's
 * notice, once per worker, that an activity-only worker polls no workflow tasks (every test stack
 * has several) is expected: at DEBUG, as in the worker process (worker/logging.ts).
 */
import { runInThisContext } from 'node:vm';
import { inspect } from 'node:util';
import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';
import { ExpectedNoticesAtDebug, FORWARDED_CORE_LOGS } from '../../worker/logging';

/** Jest's own global, outside every test file's sandbox: where the environment of the file under way leaves its sink. */
const jestGlobal = runInThisContext('globalThis') as { __quietTestLog?: (text: string) => void; __testFileRuntime?: typeof Runtime };
// For the environment's check that the file closed every worker and native connection (quiet-environment.js).
jestGlobal.__testFileRuntime = Runtime;

function toTest(entry: LogEntry): void {
  const text = `${new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString()} [${entry.level}] ${entry.message}${entry.meta && Object.keys(entry.meta).length ? ` ${inspect(entry.meta, { breakLength: Infinity, depth: 4 })}` : ''}`;
  if (jestGlobal.__quietTestLog) jestGlobal.__quietTestLog(text);
  else process.stderr.write(`${text}\n`);
}

// The SDK core's warnings too, as the worker's (e.g. the replay the versioning test expects to fail).
const runtime = Runtime.install({ logger: new ExpectedNoticesAtDebug(new DefaultLogger('WARN', toTest)), telemetryOptions: { logging: FORWARDED_CORE_LOGS } });
// Installed for its options only: the SDK remembers them, and the first worker or native
// connection of the file gets a runtime with them, shut down when its last one closes. One left
// running (a file that starts neither) holds a native handle for its log forwarding, and the
// process never exits: a single file run hangs; in a full run, jest kills that worker ("failed
// to exit gracefully"). Synchronous, as nothing uses it yet. (Protected in the SDK's types: the
// only way to end an idle runtime; the SDK ends it the same way when a file's last worker closes.)
void (runtime as unknown as { shutdownIfIdle(): Promise<void> }).shutdownIfIdle();
