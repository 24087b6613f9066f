/**
 * The rollout command returns only once the switch shows everywhere (issue #35). A fake of the
 * WorkflowService calls it makes, with the server's asynchrony as Temporal 1.29 has it: the
 * deployment's own workflow continues as new after the switch, so the listing (visibility) misses
 * the deployment for a while; the task queues get the new routing from matching later still.
 */
import { temporal } from '@temporalio/proto';
import { report, rollTo, type RolloutTarget } from '../../scripts/rollout';
import { describeDeployment, versionTaskQueues } from '../../temporal/worker-deployment';

const { TaskQueueType, WorkflowExecutionStatus } = temporal.api.enums.v1;
const NAME = 'dep';
const QUEUE = 'q';

/** A server where, after the switch, `listLag` listings miss the deployment and `queueLag` task-queue describes still route to the old version. */
function fakeServer(listLag: number, queueLag: number) {
  let current = 'a';
  let listMisses = 0;
  let queueStale = 0;
  const calls: string[] = [];
  const version = (buildId: string) => ({ deploymentVersion: { deploymentName: NAME, buildId } });
  const service = {
    listWorkerDeployments: async () => (calls.push('list'), listMisses > 0 && listMisses-- ? { workerDeployments: [] } : { workerDeployments: [{ name: NAME }] }),
    describeWorkflowExecution: async () => (calls.push('describe-workflow'), { workflowExecutionInfo: { status: WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING } }),
    describeWorkerDeployment: async () => ({ workerDeploymentInfo: { routingConfig: { currentDeploymentVersion: { buildId: current } }, versionSummaries: [version('a'), version('b')] } }),
    describeWorkerDeploymentVersion: async () => ({ workerDeploymentVersionInfo: { taskQueueInfos: versionTaskQueues(QUEUE).map((q) => ({ name: q.name, type: q.type === 'workflow' ? TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW : TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY })) } }),
    describeTaskQueue: async () => ({
      pollers: [{ deploymentOptions: { deploymentName: NAME, buildId: 'b' } }],
      versioningInfo: { currentDeploymentVersion: { buildId: queueStale > 0 && queueStale-- ? 'a' : current } },
    }),
    setWorkerDeploymentCurrentVersion: async ({ buildId }: { buildId: string }) => {
      calls.push('set');
      const previous = current;
      [current, listMisses, queueStale] = [buildId, listLag, queueLag];
      return { previousDeploymentVersion: { buildId: previous } };
    },
    countWorkflowExecutions: async () => ({ count: 0 }),
    // Two gates pinned to the old version, one of which ends before its signal arrives.
    listWorkflowExecutions: async ({ query }: { query: string }) => (calls.push(`list-workflows ${query}`), { executions: ['pacing-gate:q', 'pacing-gate:q@gone'].map((workflowId) => ({ execution: { workflowId } })) }),
    signalWorkflowExecution: async ({ workflowExecution, signalName }: { workflowExecution: { workflowId: string }; signalName: string }) => {
      if (workflowExecution.workflowId.endsWith('@gone')) throw new Error('workflow execution already completed');
      calls.push(`signal ${signalName} ${workflowExecution.workflowId}`);
      return {};
    },
  };
  return { service: service as unknown as RolloutTarget['service'], calls };
}

it('returns from a switch once describe and every task queue show it, and reports the new version current', async () => {
  const { service, calls } = fakeServer(3, 4);
  const lines: string[] = [];
  const t: RolloutTarget = { service, namespace: 'default', deploymentName: NAME, taskQueue: QUEUE, log: (l) => lines.push(l) };
  expect(await rollTo(t, 'b')).toBe(0);
  // The listings that missed the deployment after the switch were answered by its workflow.
  expect(calls.slice(calls.indexOf('set')).filter((c) => c === 'describe-workflow').length).toBeGreaterThan(0);
  expect(lines).toEqual(['pacing gates: 1 pinned to an older version woken to move to b', expect.stringMatching(/^dep:b is current \(before: a\), as describe and every task queue show/)]);
  expect((await describeDeployment(service, 'default', NAME))?.current).toBe('b');
  await report(t);
  expect(lines[2]).toBe('deployment dep: current b');
});

it('wakes every pacing gate pinned to another version once the switch shows everywhere: each moves by continuing as new in the task that makes', async () => {
  const { service, calls } = fakeServer(1, 1);
  const t: RolloutTarget = { service, namespace: 'default', deploymentName: NAME, taskQueue: QUEUE, log: () => undefined };
  expect(await rollTo(t, 'b')).toBe(0);
  const after = calls.slice(calls.indexOf('set'));
  expect(after.filter((c) => c.startsWith('list-workflows'))).toEqual([
    "list-workflows WorkflowType = 'pacingGate' AND ExecutionStatus = 'Running' AND TemporalWorkflowVersioningBehavior = 'Pinned' AND TemporalWorkerDeployment = 'dep' AND TemporalWorkerDeploymentVersion != 'dep:b'",
  ]);
  expect(after.filter((c) => c.startsWith('signal'))).toEqual(['signal gateWake pacing-gate:q']); // the gate that ended needs none
  expect(after.indexOf('signal gateWake pacing-gate:q')).toBeGreaterThan(after.lastIndexOf('describe-workflow')); // after the routing shows
});

it('says what it waits for while the switch takes long to show, and gives up after its bound', async () => {
  jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate'] });
  try {
    const { service } = fakeServer(0, Number.POSITIVE_INFINITY);
    const lines: string[] = [];
    let settled = false;
    const done = rollTo({ service, namespace: 'default', deploymentName: NAME, taskQueue: QUEUE, log: (l) => lines.push(l) }, 'b').catch((e: Error) => e).finally(() => (settled = true));
    for (let i = 0; i < 200 && !settled; i++) await jest.advanceTimersByTimeAsync(500);
    const err = await done;
    expect(lines[0]).toMatch(/^routing: waiting for task queue q.* to show b current \(\d+ s of at most 60 s\)$/);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/^deployment dep: task queue .* does not show b current after 60 s$/);
    expect(lines).toHaveLength(12); // one every 5 s
  } finally {
    jest.useRealTimers();
  }
});
