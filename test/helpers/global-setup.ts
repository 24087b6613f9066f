/**
 * Starts one Temporal dev server (in memory, headless, bound to 127.0.0.1) for the `temporal`
 * test project, downloading (or building) the Temporal CLI first if it is not on this machine
 * yet. Test files reach it through TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE (see temporal.ts).
 * Meanwhile, the run's workflow bundle is built (workflow-bundle.ts).
 */
import { ensureTemporalCli } from '../../scripts/temporal-cli';
import { startDevServer, type DevServer } from '../../scripts/temporal-dev-server';
import { prepareRunBundle } from './workflow-bundle';

/**
 * The server checks whether an old worker version is drained every few minutes, and calls it
 * drained only minutes after its last pinned workflow closed (queries may still come): seconds
 * here, so test/temporal/versioning.test.ts can watch a version drain.
 */
const TEST_DEV_SERVER_ARGS = ['matching.wv.VersionDrainageStatusRefreshInterval="1s"', 'matching.wv.VersionDrainageStatusVisibilityGracePeriod="2s"'].flatMap((v) => ['--dynamic-config-value', v]);

declare global {
  var __temporalDevServer: DevServer | undefined;
}

export default async function globalSetup(): Promise<void> {
  const cli = await ensureTemporalCli((line) => process.stderr.write(`${line}\n`));
  const [server] = await Promise.all([startDevServer({ cli, namespace: 'default', extraArgs: TEST_DEV_SERVER_ARGS }), prepareRunBundle()]);
  globalThis.__temporalDevServer = server;
  process.env.TEMPORAL_ADDRESS = server.address;
  process.env.TEMPORAL_NAMESPACE = server.namespace;
  process.env.TEMPORAL_CLI_PATH = cli;
}
