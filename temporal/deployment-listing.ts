/**
 * A deployment as visibility lists it, and the versions its open pinned workflows run on: reads
 * that never query the server's own workflows for a deployment and its versions. Those workflows
 * continue as new after every change of their state (each task queue a starting worker registers,
 * each routing sync), and a describe that meets that moment is answered NotFound and logged by the
 * server as an error, on a healthy start. The listing is a moment behind instead: it misses the
 * deployment while its new run is being indexed, and then shows it again.
 */
import type { Connection } from '@temporalio/client';
import { GATE_WORKFLOW_TYPE } from '../contract/gate-messages';
import { versionLabel, type DeploymentVersion, type Routing, type StrandedVersion } from './worker-deployment';

type Service = Connection['workflowService'];

export interface ListedDeployment extends Routing {
  /** The version whose workers registered with the deployment most recently. */
  latest?: string;
}

/** The deployment's routing and latest version as its memo in visibility says; undefined while the listing misses it. */
export async function listedDeployment(service: Service, namespace: string, deploymentName: string): Promise<ListedDeployment | undefined> {
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await service.listWorkerDeployments({ namespace, pageSize: 1000, nextPageToken });
    const d = page.workerDeployments?.find((x) => x.name === deploymentName);
    if (d) {
      const routing = d.routingConfig;
      const ramping = routing?.rampingDeploymentVersion?.buildId;
      return {
        current: routing?.currentDeploymentVersion?.buildId || undefined,
        ramping: ramping ? { buildId: ramping, percentage: routing?.rampingVersionPercentage ?? 0 } : undefined,
        latest: d.latestVersionSummary?.deploymentVersion?.buildId || undefined,
      };
    }
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return undefined;
}

/** Versions of the deployment other than `v` on which open pinned workflows run, with their count; at most `limit` versions. */
export async function pinnedElsewhere(service: Service, namespace: string, v: DeploymentVersion, o: { limit?: number; deliveriesOnly?: boolean } = {}): Promise<StrandedVersion[]> {
  const limit = o.limit ?? 20;
  // deliveriesOnly: without the pacing gates, for a report made after they moved (visibility may not show the move yet).
  const open = `TemporalWorkerDeployment = '${v.deploymentName}' AND TemporalWorkflowVersioningBehavior = 'Pinned' AND ExecutionStatus = 'Running'${o.deliveriesOnly ? ` AND WorkflowType != '${GATE_WORKFLOW_TYPE}'` : ''}`;
  const labels = [versionLabel(v)];
  const out: StrandedVersion[] = [];
  // One workflow at a time, excluding the versions found so far: as many reads as versions, whatever the number of workflows.
  while (out.length < limit) {
    const query = `${open}${labels.map((l) => ` AND TemporalWorkerDeploymentVersion != '${l}'`).join('')}`;
    const { executions } = await service.listWorkflowExecutions({ namespace, query, pageSize: 1 });
    const field = executions?.[0]?.searchAttributes?.indexedFields?.TemporalWorkerDeploymentVersion;
    if (!field?.data) break;
    const label = JSON.parse(Buffer.from(field.data).toString('utf8')) as unknown;
    // A label this query cannot name (a quote: another team's build id) or one already excluded ends the search rather than repeating it.
    if (typeof label !== 'string' || label.includes("'") || labels.includes(label)) break;
    labels.push(label);
    const { count } = await service.countWorkflowExecutions({ namespace, query: `${open} AND TemporalWorkerDeploymentVersion = '${label}'` });
    if (Number(count ?? 0) > 0) out.push({ version: { deploymentName: v.deploymentName, buildId: label.slice(v.deploymentName.length + 1) }, openPinned: Number(count) });
  }
  return out;
}
