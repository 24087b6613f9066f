/**
 * For `npm start` and `npm run cluster`: the stack's workers are the deployment's version for
 * this code (temporal/worker-deployment.ts), made current once they poll, so a newcomer notices
 * nothing. Started again on changed code, the stack runs only the new version: deliveries pinned
 * to an older one would wait for ever, so they are reported loudly with the two ways out.
 *
 * Everything here reads the task queues (matching) and visibility, never a describe of the
 * deployment or its version (temporal/deployment-listing.ts says why): a healthy start leaves no
 * error line in the server's log.
 */
import type { Connection } from '@temporalio/client';
import { connectClient } from '../temporal/client-connection';
import { temporalSettingsFromEnv } from '../temporal/connection';
import { listedDeployment, pinnedElsewhere } from '../temporal/deployment-listing';
import { deploymentVersionFromEnv, moveStrandedGates, routingPropagated, strandedReport, unpolledTaskQueues, versionLabel, versionTaskQueues, type DeploymentVersion } from '../temporal/worker-deployment';

type Service = Connection['workflowService'];
const IDENTITY = 'delivery-orchestrator start';
const WAIT_MS = 60_000;
/** A version polled but not yet the deployment's latest after this long is an older one started again: switched to without the listing's word. */
const OLDER_VERSION_AFTER_MS = 10_000;
const FAILED_PRECONDITION = 9;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function makeStackVersionCurrent(temporalEnv: Record<string, string>, log: (line: string) => void): Promise<void> {
  const env = { ...process.env, ...temporalEnv };
  const settings = temporalSettingsFromEnv(env);
  const version = deploymentVersionFromEnv(env); // the workers were started with the same environment and code
  const connection = await connectClient(settings.connectionOptions as Parameters<typeof connectClient>[0]);
  try {
    const service = connection.workflowService;
    const previous = await makeCurrent(service, settings.namespace, version, settings.taskQueue);
    log(`workers: version ${versionLabel(version)}, current${previous && previous !== version.buildId ? ` (was ${previous})` : ''}`);
    // The stack runs no other version's workers: a gate pinned to another moves here (new orders
    // would wait for it), and any other version with open pinned deliveries is stranded.
    await moveStrandedGates(service, settings.namespace, version, log);
    for (const line of strandedReport(await pinnedElsewhere(service, settings.namespace, version, { deliveriesOnly: true }), version)) log(line);
  } catch (err) {
    log(`!!! could not make the workers' version ${versionLabel(version)} current: ${(err as Error).message}; new deliveries may wait (npm run rollout -- --build-id ${version.buildId})`);
  } finally {
    await connection.close();
  }
}

/** Makes `v` current once its workers poll every queue and the deployment knows it; the version current before. */
export async function makeCurrent(service: Service, namespace: string, v: DeploymentVersion, taskQueue: string): Promise<string | undefined> {
  const started = Date.now();
  for (;;) {
    const unpolled = await unpolledTaskQueues(service, namespace, v, taskQueue);
    const listed = unpolled.length === 0 ? await listedDeployment(service, namespace, v.deploymentName) : undefined;
    if (listed?.current === v.buildId && !listed.ramping) return v.buildId;
    // A worker's first poll registers its version with the deployment, which then lists it as the latest.
    if (listed?.latest === v.buildId || (unpolled.length === 0 && Date.now() - started > OLDER_VERSION_AFTER_MS)) break;
    if (Date.now() - started > WAIT_MS) throw new Error(`version ${versionLabel(v)}: ${unpolled.length ? `no worker polls ${unpolled.join(', ')}` : 'the deployment does not list it'} after ${WAIT_MS / 1000} s`);
    await sleep(1_000);
  }
  for (;;) {
    try {
      const answer = await service.setWorkerDeploymentCurrentVersion({ namespace, deploymentName: v.deploymentName, buildId: v.buildId, identity: IDENTITY });
      const workflowQueues = versionTaskQueues(taskQueue).filter((q) => q.type === 'workflow').map((q) => q.name);
      await routingPropagated(service, namespace, v.deploymentName, { current: v.buildId }, { deployment: () => listedDeployment(service, namespace, v.deploymentName), workflowQueues: async () => workflowQueues });
      return answer.previousDeploymentVersion?.buildId ?? undefined;
    } catch (err) {
      // A queue polled but not registered with the version yet (the server logs this refusal at debug level only).
      if ((err as { code?: number }).code !== FAILED_PRECONDITION || Date.now() - started > WAIT_MS) throw err;
      await sleep(1_000);
    }
  }
}
