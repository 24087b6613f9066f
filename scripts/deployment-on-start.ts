/**
 * For `npm start` and `npm run cluster`: the stack's workers are the deployment's version for
 * this code (temporal/worker-deployment.ts), made current once they poll, so a newcomer notices
 * nothing. Started again on changed code, the stack runs only the new version: deliveries pinned
 * to an older one would wait for ever, so they are reported loudly with the two ways out.
 */
import { connectClient } from '../temporal/client-connection';
import { temporalSettingsFromEnv } from '../temporal/connection';
import { deploymentVersionFromEnv, describeDeployment, openPinned, setCurrentVersion, strandedReport, versionLabel, waitForVersion, type StrandedVersion } from '../temporal/worker-deployment';

export async function makeStackVersionCurrent(temporalEnv: Record<string, string>, log: (line: string) => void): Promise<void> {
  const env = { ...process.env, ...temporalEnv };
  const settings = temporalSettingsFromEnv(env);
  const version = deploymentVersionFromEnv(env); // the workers were started with the same environment and code
  const connection = await connectClient(settings.connectionOptions as Parameters<typeof connectClient>[0]);
  try {
    const service = connection.workflowService;
    await waitForVersion(service, settings.namespace, version, settings.taskQueue, 60_000, { quiet: true });
    const { previous } = await setCurrentVersion(service, settings.namespace, version);
    log(`workers: version ${versionLabel(version)}, current${previous && previous !== version.buildId ? ` (was ${previous})` : ''}`);
    // The stack runs no other version's workers, so any other version with open pinned deliveries is stranded.
    const stranded: StrandedVersion[] = [];
    for (const v of (await describeDeployment(service, settings.namespace, version.deploymentName))?.versions ?? []) {
      if (v.buildId === version.buildId) continue;
      const other = { deploymentName: version.deploymentName, buildId: v.buildId };
      const open = await openPinned(service, settings.namespace, other);
      if (open > 0) stranded.push({ version: other, openPinned: open });
    }
    for (const line of strandedReport(stranded, version)) log(line);
  } catch (err) {
    log(`!!! could not make the workers' version ${versionLabel(version)} current: ${(err as Error).message}; new deliveries may wait (npm run rollout -- --build-id ${version.buildId})`);
  } finally {
    await connection.close();
  }
}
