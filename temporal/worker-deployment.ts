/**
 * Worker Deployment Versioning (docs/deploying.md, "Deploying a change"). Every worker process
 * is a version of one deployment (`delivery-orchestrator` unless WORKER_DEPLOYMENT_NAME says
 * otherwise), named by its build id. A delivery is PINNED: it finishes on the build it started
 * on, so a change that does not replay against open histories can still be shipped. The pacing
 * gate lives for ever, pinned too: it moves to a new current version by continuing as new
 * (workflows/gate.ts); deliveries of older builds still ask it, so its messages change only
 * additively (contract/gate-messages.ts).
 *
 * The calls here are WorkflowService calls on the client's own connection, so the rollout
 * command works against any Temporal the client reaches (dev server, cluster, Cloud).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { z } from 'zod';
import { parseEnv } from '../provider/validation';
import { gateTaskQueue, notificationsTaskQueue, providerTaskQueues } from '../contract/task-queues';
import { GATE_WORKFLOW_TYPE, gateWakeSignal } from '../contract/gate-messages';

export const DEFAULT_DEPLOYMENT_NAME = 'delivery-orchestrator';
const ROOT = join(__dirname, '..');

export interface DeploymentVersion {
  deploymentName: string;
  buildId: string;
}

const DeploymentEnvSchema = z.object({
  // No dot and no colon: the server and the SDK join name and build id with them.
  WORKER_DEPLOYMENT_NAME: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/, { message: 'must be letters, digits, - or _ (at most 100), e.g. delivery-orchestrator' })
    .default(DEFAULT_DEPLOYMENT_NAME),
  WORKER_BUILD_ID: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/, { message: 'must be letters, digits, ., - or _ (at most 200), e.g. 0.2.0-3f2a9c1d7e4b' })
    .optional(),
});

/** This process's version: WORKER_BUILD_ID, else the package version and the code it runs (defaultBuildId). */
export function deploymentVersionFromEnv(env: NodeJS.ProcessEnv = process.env): DeploymentVersion {
  const e = parseEnv(DeploymentEnvSchema, env, 'worker deployment');
  return { deploymentName: e.WORKER_DEPLOYMENT_NAME, buildId: e.WORKER_BUILD_ID ?? defaultBuildId() };
}

/** The sources that make up the workflow bundle (workflows/ and what it imports). */
const WORKFLOW_SOURCES = ['workflows', 'contract', 'provider', 'activities'];

/** A digest of the workflow bundle's sources, for a build without git (a Docker image has no .git). */
export function workflowSourceDigest(root = ROOT): string {
  const hash = createHash('sha256');
  for (const dir of WORKFLOW_SOURCES) {
    const files = readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts'))
      .sort();
    for (const f of files) hash.update(`${dir}/${f}\0`).update(readFileSync(join(root, dir, f))).update('\0');
  }
  return hash.digest('hex').slice(0, 12);
}

function git(args: string[], root: string): string | undefined {
  try {
    return execFileSync('git', args, { cwd: root, stdio: ['ignore', 'pipe', 'ignore'], timeout: 5_000 }).toString().trim();
  } catch {
    return undefined; // no git, or not a repository (a packaged or Docker image)
  }
}

/**
 * `<package version>-<commit>`; with uncommitted changes to the workflow sources, also their digest
 * (two different edits of the same commit must not share a version). Without git: `<package
 * version>-src-<digest>`, the same for the same code wherever it is built.
 */
export function defaultBuildId(root = ROOT): string {
  const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
  const commit = git(['rev-parse', '--short=12', 'HEAD'], root);
  if (!commit) return `${version}-src-${workflowSourceDigest(root)}`;
  const dirty = git(['status', '--porcelain', '--', ...WORKFLOW_SOURCES], root);
  return dirty ? `${version}-${commit}-dirty-${workflowSourceDigest(root)}` : `${version}-${commit}`;
}

/** How versions are shown and how the server's search attribute TemporalWorkerDeploymentVersion spells them. */
export function versionLabel(v: DeploymentVersion): string {
  return `${v.deploymentName}:${v.buildId}`;
}

const { TaskQueueType, VersionDrainageStatus, WorkerDeploymentVersionStatus, WorkflowExecutionStatus } = temporal.api.enums.v1;
/** The id of the server's own workflow for a deployment: this prefix and the deployment's name (server 1.27+). */
const DEPLOYMENT_WORKFLOW_PREFIX = 'temporal-sys-worker-deployment:';
type Service = Connection['workflowService'];

/** Every task queue a version's workers poll: its workflow queues and its activity queues. */
export function versionTaskQueues(taskQueue: string): { name: string; type: 'workflow' | 'activity' }[] {
  return [
    { name: taskQueue, type: 'workflow' },
    { name: taskQueue, type: 'activity' }, // the gate's and start checks' activities
    { name: gateTaskQueue(taskQueue), type: 'workflow' },
    { name: gateTaskQueue(taskQueue), type: 'activity' },
    ...Object.values(providerTaskQueues(taskQueue)).map((name) => ({ name, type: 'activity' as const })),
    { name: notificationsTaskQueue(taskQueue), type: 'activity' }, // notification webhooks
  ];
}

export interface VersionSummary {
  buildId: string;
  status: 'inactive' | 'current' | 'ramping' | 'draining' | 'drained' | 'unknown';
  /** The server's drainage check (run every few minutes): drained means no open pinned workflow and none expected to be queried. */
  drainage?: 'draining' | 'drained';
  /** When it last stopped being current or ramping (ms since the epoch), if it ever was either. */
  lastActiveMs?: number;
}

export interface DeploymentState {
  current?: string;
  ramping?: { buildId: string; percentage: number };
  versions: VersionSummary[];
}

function statusName(s: number | null | undefined): VersionSummary['status'] {
  const names: Record<number, VersionSummary['status']> = {
    [WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_INACTIVE]: 'inactive',
    [WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_CURRENT]: 'current',
    [WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_RAMPING]: 'ramping',
    [WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINING]: 'draining',
    [WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINED]: 'drained',
  };
  return names[s ?? 0] ?? 'unknown';
}

function drainageName(s: number | null | undefined): VersionSummary['drainage'] {
  if (s === VersionDrainageStatus.VERSION_DRAINAGE_STATUS_DRAINED) return 'drained';
  if (s === VersionDrainageStatus.VERSION_DRAINAGE_STATUS_DRAINING) return 'draining';
  return undefined;
}

function isNotFound(err: unknown): boolean {
  return (err as { code?: number }).code === 5; // gRPC NOT_FOUND
}

/**
 * Whether a worker of the deployment has polled yet. Asked by listing, not describing: the server
 * logs every describe of a deployment or version it does not know as an error, and workers
 * starting together would ask before the first of them registers it. The listing is visibility,
 * a moment behind: the server's workflow for the deployment continues as new after every change
 * (a routing switch, a version's drainage), and its new run is listed only once indexed. So a
 * deployment the listing misses is looked up by that workflow (what the server itself checks),
 * strongly consistent; a server that refuses the lookup leaves the listing's answer.
 */
async function deploymentExists(service: Service, namespace: string, deploymentName: string): Promise<boolean> {
  const { workerDeployments } = await service.listWorkerDeployments({ namespace, pageSize: 1000 });
  if ((workerDeployments ?? []).some((d) => d.name === deploymentName)) return true;
  try {
    const { workflowExecutionInfo } = await service.describeWorkflowExecution({ namespace, execution: { workflowId: `${DEPLOYMENT_WORKFLOW_PREFIX}${deploymentName}` } });
    return workflowExecutionInfo?.status === WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING;
  } catch {
    return false; // not found (never polled), or not allowed to look (e.g. a Cloud identity): the listing's answer
  }
}

const DESCRIBE_RETRY_MS = 100;
const DESCRIBE_PATIENCE_MS = 5_000;

/** The deployment's routing and versions; undefined when no worker of it has polled yet. */
export async function describeDeployment(service: Service, namespace: string, deploymentName: string): Promise<DeploymentState | undefined> {
  if (!(await deploymentExists(service, namespace, deploymentName))) return undefined;
  let info;
  // A deployment that exists can still be answered NotFound for a moment: the describe is a query
  // of the server's workflow for it, whose new run (it continues as new after every routing change)
  // has not taken its first task yet. Asked again, briefly, rather than read as "no deployment".
  for (let waitedMs = 0; ; waitedMs += DESCRIBE_RETRY_MS) {
    try {
      info = (await service.describeWorkerDeployment({ namespace, deploymentName })).workerDeploymentInfo;
      break;
    } catch (err) {
      if (!isNotFound(err)) throw err;
      if (waitedMs >= DESCRIBE_PATIENCE_MS) return undefined;
      await new Promise((resolve) => setTimeout(resolve, DESCRIBE_RETRY_MS));
    }
  }
  const routing = info?.routingConfig;
  const ramping = routing?.rampingDeploymentVersion?.buildId;
  return {
    current: routing?.currentDeploymentVersion?.buildId ?? undefined,
    ramping: ramping ? { buildId: ramping, percentage: routing?.rampingVersionPercentage ?? 0 } : undefined,
    versions: (info?.versionSummaries ?? []).map((v) => ({
      buildId: v.deploymentVersion?.buildId ?? '',
      status: statusName(v.status),
      drainage: drainageName(v.drainageInfo?.status ?? v.drainageStatus),
      lastActiveMs: v.lastDeactivationTime?.seconds ? Number(v.lastDeactivationTime.seconds) * 1000 + Math.floor((v.lastDeactivationTime.nanos ?? 0) / 1e6) : undefined,
    })),
  };
}

/** A version as the server knows it: its task queues and drainage; undefined before its workers first poll. */
export async function describeVersion(service: Service, namespace: string, v: DeploymentVersion): Promise<{ status: VersionSummary['status']; drainage?: VersionSummary['drainage']; taskQueues: { name: string; type: 'workflow' | 'activity' }[] } | undefined> {
  let info;
  try {
    info = (await service.describeWorkerDeploymentVersion({ namespace, deploymentVersion: v })).workerDeploymentVersionInfo;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
  return {
    status: statusName(info?.status),
    drainage: drainageName(info?.drainageInfo?.status),
    taskQueues: (info?.taskQueueInfos ?? []).map((q) => ({ name: q.name ?? '', type: q.type === TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW ? 'workflow' : 'activity' })),
  };
}

/** The version's queues that no worker of it has polled yet. */
export async function missingTaskQueues(service: Service, namespace: string, v: DeploymentVersion, taskQueue: string): Promise<string[]> {
  // A version the deployment does not list yet is not described (the server would log an error).
  const listed = (await describeDeployment(service, namespace, v.deploymentName))?.versions.some((x) => x.buildId === v.buildId);
  const known = listed ? ((await describeVersion(service, namespace, v))?.taskQueues ?? []) : [];
  return versionTaskQueues(taskQueue)
    .filter((q) => !known.some((k) => k.name === q.name && k.type === q.type))
    .map((q) => `${q.name} (${q.type})`);
}

/** The version's queues without a poller of it yet, from the task queues themselves (matching: no query of the deployment's workflow). */
export async function unpolledTaskQueues(service: Service, namespace: string, v: DeploymentVersion, taskQueue: string): Promise<string[]> {
  const unpolled: string[] = [];
  for (const q of versionTaskQueues(taskQueue)) {
    const taskQueueType = q.type === 'workflow' ? TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW : TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY;
    const { pollers } = await service.describeTaskQueue({ namespace, taskQueue: { name: q.name }, taskQueueType });
    if (!(pollers ?? []).some((p) => p.deploymentOptions?.deploymentName === v.deploymentName && p.deploymentOptions?.buildId === v.buildId)) unpolled.push(`${q.name} (${q.type})`);
  }
  return unpolled;
}

/** Waits until the version's workers poll every queue of `taskQueue` (the server registers a version's queues as they first poll). */
export async function waitForVersion(service: Service, namespace: string, v: DeploymentVersion, taskQueue: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const missing = await missingTaskQueues(service, namespace, v, taskQueue);
    if (missing.length === 0) return;
    if (Date.now() > deadline) throw new Error(`version ${versionLabel(v)} has no worker polling ${missing.join(', ')}: start its workers first`);
    // Not faster: the server answers describes through the deployment's workflow, whose query buffer fills.
    await new Promise((r) => setTimeout(r, 1_000));
  }
}

const IDENTITY = 'delivery-orchestrator rollout';

/** A deployment's routing: its current version (undefined: unversioned workers) and the ramp, if any. */
export interface Routing {
  current?: string;
  ramping?: { buildId: string; percentage: number };
}

/** Reports a wait's progress: what it waits for and how long it has waited. */
export type Progress = (line: string) => void;

/** How long a routing change may take to show everywhere before the command gives up. */
const ROUTING_TIMEOUT_MS = 60_000;
/** A progress line at most this often while waiting. */
const PROGRESS_EVERY_MS = 5_000;

/** Where a wait for a routing change reads: the deployment's routing, and the workflow queues of the versions involved. */
export interface RoutingLook {
  deployment(): Promise<Routing | undefined>;
  workflowQueues(buildIds: readonly string[]): Promise<Iterable<string>>;
}

/** The deployment and its versions as the server's describe answers them (the rollout command's view). */
function describedLook(service: Service, namespace: string, deploymentName: string): RoutingLook {
  return {
    deployment: () => describeDeployment(service, namespace, deploymentName),
    workflowQueues: async (buildIds) => {
      const queues = new Set<string>();
      for (const buildId of buildIds) {
        // Current or ramping, so it exists: NotFound is its workflow continuing as new (describeDeployment says more). Asked again, briefly.
        let described = await describeVersion(service, namespace, { deploymentName, buildId });
        for (let waitedMs = 0; !described && waitedMs < DESCRIBE_PATIENCE_MS; waitedMs += DESCRIBE_RETRY_MS) {
          await new Promise((resolve) => setTimeout(resolve, DESCRIBE_RETRY_MS));
          described = await describeVersion(service, namespace, { deploymentName, buildId });
        }
        if (!described) throw new Error(`version ${versionLabel({ deploymentName, buildId })} is routed to but cannot be described`);
        for (const q of described.taskQueues) if (q.type === 'workflow') queues.add(q.name);
      }
      return queues;
    },
  };
}

/**
 * The server answers a routing change before everything shows it: the deployment's listing is a
 * moment behind (its workflow continued as new), and the task queues get the routing from the
 * matching service in the background (a workflow started at once may still start on the version
 * before). Waits, bounded, until the deployment shows `want` and every workflow queue of the
 * versions involved routes the same, so whatever runs next (an operator's script that stops the
 * old workers) sees the switch. (After a ramp is ended, the dev server 1.29.1 still started about
 * one in ten new workflows on the ramped build, seconds later; each finishes on the build it started on.)
 */
export async function routingPropagated(service: Service, namespace: string, deploymentName: string, want: Routing, look: RoutingLook, progress?: Progress, timeoutMs = ROUTING_TIMEOUT_MS): Promise<void> {
  const started = Date.now();
  let reported = started;
  const key = (current: string | null | undefined, ramping: string | null | undefined, percentage: number | null | undefined) => `${current ?? ''}|${ramping ?? ''}|${ramping ? (percentage ?? 0) : 0}`;
  const wanted = key(want.current, want.ramping?.buildId, want.ramping?.percentage);
  const label = `${want.current ?? 'unversioned'} current${want.ramping ? `, ${want.ramping.buildId} ramping at ${want.ramping.percentage} %` : ''}`;
  for (;;) {
    const state = await look.deployment();
    let lagging: string | undefined = key(state?.current, state?.ramping?.buildId, state?.ramping?.percentage) === wanted ? undefined : `the deployment (it shows ${state ? `${state.current ?? 'unversioned'} current${state.ramping ? `, ${state.ramping.buildId} ramping` : ''}` : 'nothing yet'})`;
    if (!lagging) {
      const involved = [want.current, want.ramping?.buildId].filter((b): b is string => !!b);
      for (const name of await look.workflowQueues(involved)) {
        const { versioningInfo: r } = await service.describeTaskQueue({ namespace, taskQueue: { name }, taskQueueType: TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW });
        if (key(r?.currentDeploymentVersion?.buildId, r?.rampingDeploymentVersion?.buildId, r?.rampingVersionPercentage) !== wanted) lagging = `task queue ${name}`;
      }
    }
    if (!lagging) {
      if (reported > started) progress?.(`routing: ${label}, shown by the deployment and every task queue after ${((Date.now() - started) / 1000).toFixed(1)} s`);
      return;
    }
    if (Date.now() - started > timeoutMs) throw new Error(`deployment ${deploymentName}: ${lagging} does not show ${label} after ${timeoutMs / 1000} s`);
    if (Date.now() - reported >= PROGRESS_EVERY_MS) {
      reported = Date.now();
      progress?.(`routing: waiting for ${lagging} to show ${label} (${Math.round((reported - started) / 1000)} s of at most ${timeoutMs / 1000} s)`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** Makes `v` the current version (and clears any ramp), then waits until the deployment and every task queue show it; a no-op when it already is. */
export async function setCurrentVersion(service: Service, namespace: string, v: DeploymentVersion, progress?: Progress): Promise<{ previous?: string }> {
  const state = await describeDeployment(service, namespace, v.deploymentName);
  if (state?.current === v.buildId && !state.ramping) return { previous: v.buildId };
  const answer = await service.setWorkerDeploymentCurrentVersion({ namespace, deploymentName: v.deploymentName, buildId: v.buildId, identity: IDENTITY });
  await routingPropagated(service, namespace, v.deploymentName, { current: v.buildId }, describedLook(service, namespace, v.deploymentName), progress);
  await wakePinnedGates(service, namespace, v, progress);
  return { previous: answer.previousDeploymentVersion?.buildId ?? undefined };
}

/**
 * Runs `act` on every pacing gate pinned to another version of the deployment than `v`; how many
 * it reached (a gate that ended meanwhile is not counted).
 */
async function forEachGatePinnedElsewhere(service: Service, namespace: string, v: DeploymentVersion, act: (workflowId: string) => Promise<unknown>): Promise<number> {
  const query = `WorkflowType = '${GATE_WORKFLOW_TYPE}' AND ExecutionStatus = 'Running' AND TemporalWorkflowVersioningBehavior = 'Pinned' AND TemporalWorkerDeployment = '${v.deploymentName}' AND TemporalWorkerDeploymentVersion != '${versionLabel(v)}'`;
  let reached = 0;
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await service.listWorkflowExecutions({ namespace, query, nextPageToken });
    for (const e of page.executions ?? []) {
      const done = await act(e.execution?.workflowId ?? '').then(
        () => true,
        (err: Error) => {
          if (/not found|already completed/i.test(err.message)) return false; // it ended meanwhile
          throw err;
        },
      );
      if (done) reached++;
    }
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return reached;
}

/**
 * Signals every pacing gate pinned to another version of the deployment: in the task that signal
 * makes, the gate sees that its version is no longer the target and moves to `v` by continuing as
 * new (workflows/gate.ts). A gate with a backlog would see it at its next timer anyway; an idle one
 * runs no task until its next ask, and would hold its old version open (not drained) until then.
 */
export async function wakePinnedGates(service: Service, namespace: string, v: DeploymentVersion, progress?: Progress): Promise<number> {
  // No run ID: a gate that moved meanwhile is woken on its new version, which ignores it.
  const woken = await forEachGatePinnedElsewhere(service, namespace, v, (workflowId) => service.signalWorkflowExecution({ namespace, workflowExecution: { workflowId }, signalName: gateWakeSignal.name, identity: IDENTITY }));
  if (woken > 0) progress?.(`pacing gates: ${woken} pinned to an older version woken to move to ${v.buildId}`);
  return woken;
}

/**
 * For a stack that runs version `v` alone (`npm start`, `npm run cluster` started again on changed
 * code): a gate pinned to another version has no worker left to run it, so it cannot move by
 * continuing as new, and every new order of its account would wait for it. Each such gate gets an
 * AUTO_UPGRADE versioning override: its next task runs on the current version, replaying its run
 * there as 0.3.0's gates upgraded in place (its messages only grow: docs/deploying.md); its next
 * continue-as-new starts pinned again, as the server passes on a pinned override but not this one.
 */
export async function moveStrandedGates(service: Service, namespace: string, v: DeploymentVersion, progress?: Progress): Promise<number> {
  const override = { versioningOverride: { autoUpgrade: true } };
  const moved = await forEachGatePinnedElsewhere(service, namespace, v, (workflowId) => service.updateWorkflowExecutionOptions({ namespace, workflowExecution: { workflowId }, workflowExecutionOptions: override, updateMask: { paths: ['versioning_override'] }, identity: IDENTITY }));
  if (moved > 0) progress?.(`pacing gates: ${moved} pinned to a version no worker of this stack runs, moved to ${v.buildId} (upgraded in place, pinned again at their next continue-as-new)`);
  return moved;
}

/** Sends `percentage` of new workflows to `v` (`v` undefined ends the ramp), then waits until the deployment and every task queue show it. */
export async function setRampingVersion(service: Service, namespace: string, deploymentName: string, buildId: string | undefined, percentage: number, progress?: Progress): Promise<void> {
  const before = await describeDeployment(service, namespace, deploymentName);
  await service.setWorkerDeploymentRampingVersion({ namespace, deploymentName, buildId: buildId ?? '', percentage: buildId ? percentage : 0, identity: IDENTITY });
  await routingPropagated(service, namespace, deploymentName, { current: before?.current, ramping: buildId ? { buildId, percentage } : undefined }, describedLook(service, namespace, deploymentName), progress);
}

/** Pollers heard from in this long count as alive (a long poll is renewed within about a minute). */
const POLLER_FRESH_MS = 90_000;

/** Whether a worker of `buildId` polled `taskQueue`'s workflow tasks lately. */
export async function hasPollers(service: Service, namespace: string, v: DeploymentVersion, taskQueue: string): Promise<boolean> {
  const { pollers } = await service.describeTaskQueue({ namespace, taskQueue: { name: taskQueue }, taskQueueType: TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW });
  const now = Date.now();
  return (pollers ?? []).some((p) => {
    const d = p.deploymentOptions;
    const seen = p.lastAccessTime?.seconds ? Number(p.lastAccessTime.seconds) * 1000 : now;
    return d?.deploymentName === v.deploymentName && d?.buildId === v.buildId && now - seen < POLLER_FRESH_MS;
  });
}

/** Open workflows pinned to `v` (visibility: a second or so behind). */
export async function openPinned(service: Service, namespace: string, v: DeploymentVersion): Promise<number> {
  const query = `TemporalWorkerDeploymentVersion = '${versionLabel(v)}' AND TemporalWorkflowVersioningBehavior = 'Pinned' AND ExecutionStatus = 'Running'`;
  const { count } = await service.countWorkflowExecutions({ namespace, query });
  return Number(count ?? 0);
}

export interface StrandedVersion {
  version: DeploymentVersion;
  openPinned: number;
}

/** Versions with open pinned deliveries and no worker polling for them: those deliveries wait until one of the two ways out is taken. */
export async function strandedVersions(service: Service, namespace: string, deploymentName: string, taskQueue: string): Promise<StrandedVersion[]> {
  const state = await describeDeployment(service, namespace, deploymentName);
  const out: StrandedVersion[] = [];
  for (const summary of state?.versions ?? []) {
    const version = { deploymentName, buildId: summary.buildId };
    if (summary.drainage === 'drained' && summary.status !== 'current') continue;
    const open = await openPinned(service, namespace, version);
    if (open > 0 && !(await hasPollers(service, namespace, version, taskQueue))) out.push({ version, openPinned: open });
  }
  return out;
}

/** The loud report: what is stuck and the two ways out. */
export function strandedReport(stranded: readonly StrandedVersion[], current: DeploymentVersion | undefined): string[] {
  const lines: string[] = [];
  for (const { version, openPinned: n } of stranded) {
    const label = versionLabel(version);
    const commit = /-([0-9a-f]{12})(?:-dirty-|$)/.exec(version.buildId)?.[1];
    lines.push(
      `!!! version ${label}: ${n} open pinned ${n === 1 ? 'delivery' : 'deliveries'} and NO worker polling for it; they wait until one of:`,
      `!!!   1. start that version's workers: check out ${commit ? `commit ${commit}` : 'its release tag'} and run them with WORKER_BUILD_ID=${version.buildId} WORKER_DEPLOYMENT_NAME=${version.deploymentName} (npm run worker); stop them once the rollout command reports it drained;`,
      `!!!   2. only if the change is known to replay their histories (the replay test passes on them): move them on with`,
      `!!!      temporal workflow update-options --query "TemporalWorkerDeploymentVersion='${label}' AND ExecutionStatus='Running'" --yes --versioning-override-behavior ${current ? `pinned --versioning-override-deployment-name ${current.deploymentName} --versioning-override-build-id ${current.buildId}` : 'auto_upgrade'}`,
    );
  }
  return lines;
}

/**
 * What a worker does with its version when it starts (WORKER_MAKE_CURRENT): `if-none` (the
 * default) makes it current only when the deployment has no current version yet, the first start
 * of a deployment, so a lone worker (docker-compose) works with nothing else to run; `always`
 * makes it current at every start (one-process setups that restart on new code); `never` leaves
 * routing to the rollout command (`npm run rollout`).
 */
export const MakeCurrentSchema = z.enum(['if-none', 'always', 'never']).default('if-none');
export type MakeCurrent = z.output<typeof MakeCurrentSchema>;

/** Applies WORKER_MAKE_CURRENT once the version's workers poll; says what it did, or undefined. */
export async function routeOnStart(service: Service, namespace: string, v: DeploymentVersion, taskQueue: string, mode: MakeCurrent): Promise<string | undefined> {
  if (mode === 'never') return undefined;
  const state = await describeDeployment(service, namespace, v.deploymentName);
  if (mode === 'if-none' && state?.current) return undefined;
  if (state?.current === v.buildId && !state.ramping) return undefined;
  await waitForVersion(service, namespace, v, taskQueue);
  try {
    await setCurrentVersion(service, namespace, v);
  } catch (err) {
    // Two workers of one version starting together: the other one made it current first.
    if ((await describeDeployment(service, namespace, v.deploymentName))?.current !== v.buildId) throw err;
  }
  return `made ${versionLabel(v)} the current version`;
}
