/**
 * `npm start` and `npm run cluster` make their version current without one describe of the
 * deployment or the version (scripts/deployment-on-start.ts): the server answers a describe that
 * meets its workflow continuing as new with NotFound and logs it as an error. A fake of the
 * WorkflowService with the server's asynchrony as Temporal 1.29 has it: the version's pollers
 * show before the listing names it, SetCurrentVersion refuses while a queue is not registered
 * yet, and the listing and the queues show the switch late.
 */
import { temporal } from '@temporalio/proto';
import { makeCurrent } from '../../scripts/deployment-on-start';
import { pinnedElsewhere } from '../../temporal/deployment-listing';

const NAME = 'dep';
const QUEUE = 'q';
const { TaskQueueType } = temporal.api.enums.v1;

function fakeServer() {
  let current = 'a';
  let latest = 'a';
  let pollsSeen = 0;
  let refusals = 1;
  let listLag = 0;
  const calls: string[] = [];
  const version = (buildId: string) => ({ deploymentName: NAME, buildId });
  const service = {
    describeTaskQueue: async ({ taskQueueType }: { taskQueueType: number }) => {
      calls.push('queue');
      // The new version's workers poll from the third look on; its registration (the listing's latest) follows.
      if (taskQueueType === TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW && ++pollsSeen === 6) latest = 'b';
      return { pollers: pollsSeen >= 3 ? [{ deploymentOptions: version('b') }] : [], versioningInfo: { currentDeploymentVersion: version(listLag > 0 ? 'a' : current) } };
    },
    listWorkerDeployments: async () => {
      calls.push('list');
      if (listLag > 0 && listLag--) return { workerDeployments: [] }; // the deployment's new run, not indexed yet
      return { workerDeployments: [{ name: NAME, routingConfig: { currentDeploymentVersion: version(current) }, latestVersionSummary: { deploymentVersion: version(latest) } }] };
    },
    setWorkerDeploymentCurrentVersion: async ({ buildId }: { buildId: string }) => {
      calls.push('set');
      // The server would answer NotFound (logged as an error) for a version the deployment does not have yet.
      if (latest !== buildId) throw Object.assign(new Error(`version ${buildId} not found in deployment`), { code: 5 });
      if (refusals > 0 && refusals--) throw Object.assign(new Error('proposed current version is missing active task queues'), { code: 9 });
      const previous = current;
      [current, listLag] = [buildId, 2];
      return { previousDeploymentVersion: version(previous) };
    },
    describeWorkerDeployment: async () => {
      throw new Error('the start described the deployment');
    },
    describeWorkerDeploymentVersion: async () => {
      throw new Error('the start described the version');
    },
  };
  return { service: service as unknown as Parameters<typeof makeCurrent>[0], calls, current: () => current };
}

it('waits for the pollers and the listing, asks again after a refusal, and returns once the listing and every queue show the switch, with no describe', async () => {
  jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate'] });
  try {
    const server = fakeServer();
    let settled = false;
    const done = makeCurrent(server.service, 'default', { deploymentName: NAME, buildId: 'b' }, QUEUE).finally(() => (settled = true));
    for (let i = 0; i < 200 && !settled; i++) await jest.advanceTimersByTimeAsync(500);
    expect(await done).toBe('a');
    expect(server.current()).toBe('b');
    // Asked only once the listing named b its latest (else the fake's NotFound would have ended it), and again after the one refusal.
    expect(server.calls.filter((c) => c === 'set')).toHaveLength(2);
    // Once switched, it returned only after the listing showed the deployment again (two misses first).
    const afterSwitch = server.calls.slice(server.calls.lastIndexOf('set'));
    expect(afterSwitch.filter((c) => c === 'list').length).toBeGreaterThanOrEqual(3);
  } finally {
    jest.useRealTimers();
  }
});

it('finds each version with open pinned workflows other than its own, one listing and one count per version', async () => {
  const open: Record<string, number> = { 'dep:a': 3, 'dep:c': 1, 'dep:b': 5 };
  const queries: string[] = [];
  const label = (q: string, op: '!=' | '=') => [...q.matchAll(new RegExp(`TemporalWorkerDeploymentVersion ${op} '([^']+)'`, 'g'))].map((m) => m[1]!);
  const service = {
    listWorkflowExecutions: async ({ query }: { query: string }) => {
      queries.push(query);
      const left = Object.keys(open).filter((l) => !label(query, '!=').includes(l));
      return { executions: left.length ? [{ searchAttributes: { indexedFields: { TemporalWorkerDeploymentVersion: { data: Buffer.from(JSON.stringify(left[0])) } } } }] : [] };
    },
    countWorkflowExecutions: async ({ query }: { query: string }) => ({ count: open[label(query, '=')[0]!] ?? 0 }),
  } as unknown as Parameters<typeof pinnedElsewhere>[0];
  const found = await pinnedElsewhere(service, 'default', { deploymentName: NAME, buildId: 'b' });
  expect(found).toEqual([
    { version: { deploymentName: NAME, buildId: 'a' }, openPinned: 3 },
    { version: { deploymentName: NAME, buildId: 'c' }, openPinned: 1 },
  ]);
  expect(queries).toHaveLength(3); // a, c, then none left
  expect(queries[0]).toContain("TemporalWorkflowVersioningBehavior = 'Pinned' AND ExecutionStatus = 'Running'");
});
