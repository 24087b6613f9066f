/**
 * Starts one Temporal dev server (in memory, headless, bound to 127.0.0.1) for the `temporal`
 * test project, building the server tools first if they are not on this machine yet
 * (scripts/cluster/tools.ts), and finds the Temporal CLI that tests use as a command-line client
 * (TEMPORAL_CLI_PATH). Test files reach the server through TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE
 * (see temporal.ts). Meanwhile, the run's workflow bundle is built (workflow-bundle.ts).
 */
import { ensureServerTools } from '../../scripts/cluster/tools';
import { ensureTemporalCli } from '../../scripts/temporal-cli';
import { startDevServer, type DevServer } from '../../scripts/temporal-dev-server';
import { prepareRunBundle } from './workflow-bundle';

/**
 * The server checks whether an old worker version is drained every few minutes, and calls it
 * drained only minutes after its last pinned workflow closed (queries may still come): seconds
 * here, so test/temporal/versioning.test.ts can watch a version drain.
 */
const TEST_DYNAMIC_CONFIG = { 'matching.wv.VersionDrainageStatusRefreshInterval': '1s', 'matching.wv.VersionDrainageStatusVisibilityGracePeriod': '2s' };

declare global {
  var __temporalDevServer: DevServer | undefined;
}

export default async function globalSetup(): Promise<void> {
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const [tools, cli] = await Promise.all([ensureServerTools(log), ensureTemporalCli(log)]);
  const [server] = await Promise.all([startDevServer({ tools, namespace: 'default', dynamicConfig: TEST_DYNAMIC_CONFIG }), prepareRunBundle()]);
  globalThis.__temporalDevServer = server;
  process.env.TEMPORAL_ADDRESS = server.address;
  process.env.TEMPORAL_NAMESPACE = server.namespace;
  process.env.TEMPORAL_CLI_PATH = cli;
}
