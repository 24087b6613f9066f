/**
 * Who polls the delivery task queue, seen from outside the workers: the Temporal server's
 * DescribeTaskQueue (a public API, not a visibility query, so outside the fleet view's visibility
 * budget) lists each poller with the time of its last poll. When every worker is gone, nobody
 * scrapes their metrics, and schedule-to-start is not recorded either (nothing starts): this
 * gauge is what says so, from the one process that is not a worker.
 *
 * The server lists a poller for a few minutes after its last poll, and an idle worker's long
 * poll lasts up to a minute, so the signal is the age of the newest poll: under about a minute
 * while any worker polls, growing from the moment the last one stops. A queue with no poller
 * seen since this process started is aged from its start.
 */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { Gauge, type Registry } from 'prom-client';

const TYPES = { workflow: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, activity: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY } as const;
/** One DescribeTaskQueue per type this often: the alert's resolution, at a negligible cost. */
export const POLLERS_PERIOD_MS = 15_000;

export interface TaskQueuePollersOptions {
  client: Client;
  namespace: string;
  taskQueue: string;
  registry: Registry;
  now?: () => number;
}

export class TaskQueuePollers {
  /** The newest poll seen, per type (ms). */
  private readonly lastPoll = new Map<keyof typeof TYPES, number>();
  private timer?: ReturnType<typeof setInterval>;
  private running?: Promise<void>;

  constructor(private readonly o: TaskQueuePollersOptions) {
    const now = o.now ?? Date.now;
    const since = now();
    const { lastPoll } = this;
    new Gauge({
      name: 'delivery_task_queue_last_poll_age_seconds',
      help: 'Seconds since a worker last polled the delivery task queue, by task type (workflow, activity), from the server\'s DescribeTaskQueue; since the fleet view\'s start when none has been seen.',
      labelNames: ['task_queue', 'type'],
      registers: [o.registry],
      collect() {
        for (const type of Object.keys(TYPES) as (keyof typeof TYPES)[]) this.labels(o.taskQueue, type).set(Math.max(0, (now() - (lastPoll.get(type) ?? since)) / 1000));
      },
    });
  }

  /** Describes the queue now, then every POLLERS_PERIOD_MS until stop(). */
  start(): void {
    const tick = () => {
      this.running ??= this.describe().finally(() => (this.running = undefined));
    };
    tick();
    this.timer = setInterval(tick, POLLERS_PERIOD_MS);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** One DescribeTaskQueue per type; a failed one leaves the last poll seen as it was (the age grows). */
  async describe(): Promise<void> {
    for (const [type, taskQueueType] of Object.entries(TYPES) as [keyof typeof TYPES, number][]) {
      try {
        const r = await this.o.client.workflowService.describeTaskQueue({ namespace: this.o.namespace, taskQueue: { name: this.o.taskQueue }, taskQueueType });
        for (const p of r.pollers ?? []) {
          const at = Number(p.lastAccessTime?.seconds ?? 0) * 1000 + Math.floor((p.lastAccessTime?.nanos ?? 0) / 1e6);
          if (at > (this.lastPoll.get(type) ?? 0)) this.lastPoll.set(type, at);
        }
      } catch {
        // Temporal unreachable from here: the age grows, and FleetViewStale says why nothing else moves.
      }
    }
  }
}
