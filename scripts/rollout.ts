/**
 * `npm run rollout`: moves new deliveries to another build of the workers, against whatever
 * Temporal the environment names (temporal/connection.ts: dev server, `npm run cluster`, Cloud).
 *   npm run rollout                              the deployment's versions, drainage and stranded deliveries
 *   npm run rollout -- --build-id B --ramp 10    10 % of new deliveries start on B (B's workers must poll every queue)
 *   npm run rollout -- --build-id B              B becomes current: every new delivery starts on it
 *   npm run rollout -- --abort                   the version current before the last switch is current again
 *   ... --watch                                  then reports every 15 s until the old versions are drained
 * A switch or ramp returns once `describe` (the deployment) and every task queue show it (at most
 * 60 s, a progress line every 5 s): a script's next step sees the new routing.
 * Open deliveries stay on the build they started on (PINNED); the pacing gates move to a new
 * current version by continuing as new, woken by the switch. docs/deploying.md, "Deploying a
 * change", gives the whole procedure.
 * Exit codes: 0 done, 1 unexpected error, 2 bad usage, 3 version not ready (no pollers), 4 stranded deliveries.
 */
import { parseArgs } from 'node:util';
import type { Connection } from '@temporalio/client';
import { connectClient } from '../temporal/client-connection';
import { temporalSettingsFromEnv } from '../temporal/connection';
import {
  deploymentVersionFromEnv,
  describeDeployment,
  describeVersion,
  hasPollers,
  missingTaskQueues,
  openPinned,
  setCurrentVersion,
  setRampingVersion,
  strandedReport,
  strandedVersions,
  versionLabel,
  type DeploymentState,
} from '../temporal/worker-deployment';

const EXIT = { ok: 0, error: 1, usage: 2, notReady: 3, stranded: 4 } as const;

export class UsageError extends Error {}

export interface RolloutArgs {
  buildId?: string;
  ramp?: number;
  abort: boolean;
  watch: boolean;
}

export function parseRolloutArgs(argv: string[]): RolloutArgs {
  const { values } = parseArgs({ args: argv, options: { 'build-id': { type: 'string' }, ramp: { type: 'string' }, abort: { type: 'boolean', default: false }, watch: { type: 'boolean', default: false } }, strict: true });
  const buildId = values['build-id'];
  if (buildId !== undefined && !/^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/.test(buildId)) throw new UsageError('--build-id: must be letters, digits, ., - or _ (at most 200)');
  let ramp: number | undefined;
  if (values.ramp !== undefined) {
    ramp = Number(values.ramp);
    if (!Number.isInteger(ramp) || ramp < 1 || ramp > 99) throw new UsageError('--ramp: must be a whole percentage from 1 to 99');
    if (!buildId) throw new UsageError('--ramp: needs --build-id');
  }
  if (values.abort && buildId) throw new UsageError('--abort: takes no --build-id (it returns to the version that was current before)');
  return { buildId, ramp, abort: values.abort, watch: values.watch };
}

export interface RolloutTarget {
  service: Connection['workflowService'];
  namespace: string;
  deploymentName: string;
  taskQueue: string;
  log: (line: string) => void;
}

/** Checks B's workers poll every queue, then ramps it or makes it current. Returns an exit code. */
export async function rollTo(t: RolloutTarget, buildId: string, ramp?: number): Promise<number> {
  const v = { deploymentName: t.deploymentName, buildId };
  const missing = await missingTaskQueues(t.service, t.namespace, v, t.taskQueue);
  if (missing.length > 0 || !(await hasPollers(t.service, t.namespace, v, t.taskQueue))) {
    t.log(`version ${versionLabel(v)} is not ready: no worker of it polls ${missing.length ? missing.join(', ') : t.taskQueue}. Start its workers (WORKER_BUILD_ID=${buildId}, WORKER_MAKE_CURRENT=never) first.`);
    return EXIT.notReady;
  }
  if (ramp !== undefined) {
    await setRampingVersion(t.service, t.namespace, t.deploymentName, buildId, ramp, t.log);
    t.log(`ramping ${versionLabel(v)}: ${ramp} % of new deliveries start on it (describe and every task queue show it); run again without --ramp to make it current, or --abort`);
  } else {
    const { previous } = await setCurrentVersion(t.service, t.namespace, v, t.log);
    t.log(`${versionLabel(v)} is current (before: ${previous ?? 'unversioned'}), as describe and every task queue show; open deliveries stay on the version they started on`);
  }
  return EXIT.ok;
}

/** Ends a ramp, or makes current again the version that was last current (or ramping) before this one. */
export async function abortRollout(t: RolloutTarget): Promise<number> {
  const state = await describeDeployment(t.service, t.namespace, t.deploymentName);
  if (state?.ramping) {
    await setRampingVersion(t.service, t.namespace, t.deploymentName, undefined, 0, t.log);
    t.log(`ramp of ${state.ramping.buildId} ended: new deliveries start on ${state.current ?? 'unversioned workers'} again; those started on ${state.ramping.buildId} finish there`);
    return EXIT.ok;
  }
  const previous = (state?.versions ?? []).filter((v) => v.buildId !== state?.current && v.lastActiveMs !== undefined).sort((a, b) => b.lastActiveMs! - a.lastActiveMs!)[0];
  if (!previous) {
    t.log('nothing to abort: no ramp, and no version was current before this one');
    return EXIT.usage;
  }
  return rollTo(t, previous.buildId);
}

/** The deployment's versions, the old ones' drainage, which may be stopped, and any stranded deliveries. */
export async function report(t: RolloutTarget): Promise<{ state?: DeploymentState; stranded: number; draining: number }> {
  const state = await describeDeployment(t.service, t.namespace, t.deploymentName);
  if (!state) {
    t.log(`deployment ${t.deploymentName}: no worker of it has polled yet`);
    return { stranded: 0, draining: 0 };
  }
  t.log(`deployment ${t.deploymentName}: current ${state.current ?? '(unversioned)'}${state.ramping ? `, ramping ${state.ramping.buildId} at ${state.ramping.percentage} %` : ''}`);
  let draining = 0;
  for (const v of state.versions) {
    if (v.buildId === state.current || v.buildId === state.ramping?.buildId) continue;
    const version = { deploymentName: t.deploymentName, buildId: v.buildId };
    // The version's own description: the deployment's summary of it can lag behind the drainage check.
    const drainage = (await describeVersion(t.service, t.namespace, version))?.drainage ?? v.drainage;
    const open = await openPinned(t.service, t.namespace, version);
    const polled = await hasPollers(t.service, t.namespace, version, t.taskQueue);
    let verdict: string;
    if (drainage === 'drained' && open === 0) verdict = polled ? 'drained: its workers may be stopped' : 'drained, no workers';
    else if (open > 0) verdict = `${open} open pinned deliveries${polled ? ', its workers must keep running' : ''}`;
    else verdict = 'no open pinned delivery; the server has not reported it drained yet (it checks every few minutes, queries may still come)';
    if (drainage !== 'drained' && v.status !== 'inactive') draining++;
    t.log(`  ${v.buildId}: ${v.status}, ${verdict}`);
  }
  const stranded = await strandedVersions(t.service, t.namespace, t.deploymentName, t.taskQueue);
  const current = state.current ? { deploymentName: t.deploymentName, buildId: state.current } : undefined;
  for (const line of strandedReport(stranded, current)) t.log(line);
  return { state, stranded: stranded.length, draining };
}

async function main(): Promise<number> {
  let args: RolloutArgs;
  try {
    args = parseRolloutArgs(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`rollout: ${(err as Error).message}\n`);
    return EXIT.usage;
  }
  const settings = temporalSettingsFromEnv();
  const { deploymentName } = deploymentVersionFromEnv({ ...process.env, WORKER_BUILD_ID: args.buildId ?? 'unused' });
  const connection = await connectClient(settings.connectionOptions as Parameters<typeof connectClient>[0]);
  const t: RolloutTarget = { service: connection.workflowService, namespace: settings.namespace, deploymentName, taskQueue: settings.taskQueue, log: (l) => process.stdout.write(`${l}\n`) };
  try {
    let code: number = EXIT.ok;
    if (args.abort) code = await abortRollout(t);
    else if (args.buildId) code = await rollTo(t, args.buildId, args.ramp);
    if (code !== EXIT.ok) return code;
    for (;;) {
      const r = await report(t);
      if (!args.watch || r.draining === 0) return r.stranded > 0 ? EXIT.stranded : EXIT.ok;
      await new Promise((res) => setTimeout(res, 15_000));
    }
  } finally {
    await connection.close();
  }
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (err: Error) => {
      process.stderr.write(`rollout: ${err.message}\n`);
      process.exit(EXIT.error);
    },
  );
}
