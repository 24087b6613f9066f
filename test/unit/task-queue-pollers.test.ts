/**
 * The fleet view's probe of the delivery task queue (fleet/pollers.ts): the age of the newest
 * poll Temporal's DescribeTaskQueue reports, per task type; it keeps growing when the pollers go
 * or the server cannot be asked, and counts from the probe's start when none was ever seen.
 */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { Registry } from 'prom-client';
import { TaskQueuePollers } from '../../fleet/pollers';

const WORKFLOW = temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW;
const at = (ms: number) => ({ seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 });

function probe() {
  let now = 1_000_000;
  const answers: Record<number, { lastAccessTime: ReturnType<typeof at> }[] | Error> = {};
  const asked: unknown[] = [];
  const client = {
    workflowService: {
      describeTaskQueue: async (req: { taskQueueType: number }) => {
        asked.push(req);
        const a = answers[req.taskQueueType] ?? [];
        if (a instanceof Error) throw a;
        return { pollers: a };
      },
    },
  } as unknown as Client;
  const registry = new Registry();
  const pollers = new TaskQueuePollers({ client, namespace: 'ns', taskQueue: 'deliveries', registry, now: () => now });
  const ages = async () => Object.fromEntries(((await registry.getSingleMetric('delivery_task_queue_last_poll_age_seconds')!.get()).values).map((v) => [v.labels.type, v.value]));
  return { pollers, answers, asked, ages, advance: (ms: number) => (now += ms), now: () => now };
}

it('reports the newest poll of each type, and its age growing once no worker polls', async () => {
  const p = probe();
  p.answers[WORKFLOW] = [{ lastAccessTime: at(p.now() - 40_000) }, { lastAccessTime: at(p.now() - 5_000) }];
  await p.pollers.describe();
  expect(p.asked).toEqual([expect.objectContaining({ namespace: 'ns', taskQueue: { name: 'deliveries' }, taskQueueType: WORKFLOW }), expect.objectContaining({ taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY })]);
  // The activity type has had no poller since the probe started: aged from then.
  expect(await p.ages()).toEqual({ workflow: 5, activity: 0 });

  // The workers stop: the server keeps listing the last polls for a while, then none; the server down: the same.
  p.advance(60_000);
  await p.pollers.describe();
  p.answers[WORKFLOW] = [];
  p.advance(60_000);
  await p.pollers.describe();
  p.answers[WORKFLOW] = new Error('unavailable');
  p.advance(30_000);
  await p.pollers.describe();
  expect(await p.ages()).toEqual({ workflow: 155, activity: 150 });
});
