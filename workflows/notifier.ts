/**
 * Sends a delivery's notifications (workflows/notification-outbox.ts keeps the books): to an
 * order workflow by signal (Temporal's signal-external command: nothing to retry on our side but
 * a target that does not exist), to an operator-configured HTTP endpoint by activity (Temporal
 * retries it on the Standard Webhooks-like schedule for up to 3 days). One loop per target, each
 * in sequence order (the next waits for the previous), outside the delivery's own path: a slow or
 * dead target never delays the following of the provider. The loops run in non-cancellable
 * scopes, so a cancelled delivery still tells of its cancellation and its end.
 */
import { type ActivityOptions, CancellationScope, condition, getExternalWorkflowHandle, proxyActivities, proxySinks, sleep, workflowInfo, type Sinks } from '@temporalio/workflow';
import type { NotifyActivities } from '../activities/notify-activities';
import { NOTIFY_FAILURE_TYPES } from '../contract/failures';
import { failureTypeIn, reasonOf } from '../contract/failure-cause';
import { DEFAULT_NOTIFY_SIGNAL, type NotifySettings } from '../contract/notification-types';
import type { DeliveryNotification, NotifierSnapshot } from '../contract/delivery-types';
import type { TimelineEntry } from '../contract/delivery-types';
import { notificationsTaskQueue } from '../contract/task-queues';
import { NOTIFY_GIVE_UP_AFTER as GIVE_UP_AFTER } from '../notifications/retry-schedule';
import type { NotificationAttempt } from '../metrics/worker-metrics';
import { NotificationOutbox, type StopFate } from './notification-outbox';

/**
 * A signal's attempts, counted by the worker like an endpoint's (metrics/worker-metrics.ts): a
 * sink, which the SDK calls once the task's work is done and never on replay. No order data in
 * it: the key (the delivery's workflow ID and the target) only tells a pending retry from another.
 */
export interface NotifierSinks extends Sinks {
  notifications: { signalAttempt(o: Pick<NotificationAttempt, 'key' | 'result' | 'nextRetryMs'>): void };
}
const { notifications } = proxySinks<NotifierSinks>();

type Target = { key: string; kind: 'workflow'; workflowId: string; signal: string } | { key: string; kind: 'endpoint'; endpoint: string };

/** Who is told: the named order workflow (or, for a child workflow, its parent unless told not to) and the named endpoint. */
export function notifyTargets(notify: NotifySettings | undefined, parentWorkflowId: string | undefined): Target[] {
  const targets: Target[] = [];
  const workflowId = notify?.workflowId ?? (notify?.parent !== false ? parentWorkflowId : undefined);
  if (workflowId !== undefined) targets.push({ key: `workflow:${workflowId}`, kind: 'workflow', workflowId, signal: notify?.signal ?? DEFAULT_NOTIFY_SIGNAL });
  if (notify?.endpoint !== undefined) targets.push({ key: `endpoint:${notify.endpoint}`, kind: 'endpoint', endpoint: notify.endpoint });
  return targets;
}

export class Notifier {
  readonly outbox: NotificationOutbox;
  private readonly targets: Target[];
  private readonly loops: Promise<void>[] = [];
  private finishing = false;
  /** Set once the start is checked (or on a continued run): a refused start tells nothing. */
  started = false;

  constructor(
    notify: NotifySettings | undefined,
    carried: NotifierSnapshot | undefined,
    timeline: readonly TimelineEntry[],
    /** Records a target's end once, on the timeline. */
    private readonly note: (text: string) => void,
  ) {
    const info = workflowInfo();
    this.targets = notifyTargets(notify, info.parent?.workflowId);
    this.outbox = new NotificationOutbox(info.workflowId, this.targets.map((t) => t.key), carried, timeline);
  }

  /** Starts one sending loop per target. */
  start(): void {
    if (this.started) return;
    this.started = true;
    for (const t of this.targets) {
      if (this.outbox.stoppedWith(t.key)) continue;
      this.loops.push(CancellationScope.nonCancellable(() => this.run(t)));
    }
  }

  /** Waits until every target has had every notification (or stopped), then ends the loops. */
  async finish(): Promise<void> {
    this.finishing = true;
    await CancellationScope.nonCancellable(() => Promise.all(this.loops));
  }

  private async run(t: Target): Promise<void> {
    for (;;) {
      await condition(() => this.outbox.next(t.key) !== undefined || this.finishing);
      const n = this.outbox.next(t.key);
      if (!n) return; // finishing, and everything sent
      const stopped = t.kind === 'workflow' ? await this.signal(t, n) : await this.post(t, n);
      if (stopped) {
        this.outbox.stop(t.key, stopped.fate);
        this.note(`notifications to ${t.key} stopped at #${n.sequence}: ${stopped.why}`);
        return;
      }
      this.outbox.sent(t.key, n.sequence);
    }
  }

  /** Returns how the target ended, or undefined once the signal is delivered. */
  private async signal(t: Extract<Target, { kind: 'workflow' }>, n: DeliveryNotification): Promise<{ fate: StopFate; why: string } | undefined> {
    const key = `${workflowInfo().workflowId}/${t.key}`;
    for (let attempt = 1; ; attempt++) {
      try {
        await getExternalWorkflowHandle(t.workflowId).signal(t.signal, n);
        notifications.signalAttempt({ key, result: 'sent' });
        return undefined;
      } catch (err) {
        const message = (err as Error).message ?? '';
        // The server's causes: the workflow (or namespace) not found, or the per-workflow signal limit.
        const stop: { fate: StopFate; why: string } | undefined = /not found/i.test(message) ? { fate: 'not_found', why: `no running workflow ${t.workflowId}` } : /limit/i.test(message) ? { fate: 'failed', why: message } : undefined;
        const delayMs = Math.min(60_000, 1_000 * 2 ** Math.min(attempt - 1, 6));
        notifications.signalAttempt(stop ? { key, result: 'failed' } : { key, result: 'retried', nextRetryMs: delayMs });
        if (stop) return stop;
        await sleep(delayMs);
      }
    }
  }

  private async post(t: Extract<Target, { kind: 'endpoint' }>, n: DeliveryNotification): Promise<{ fate: StopFate; why: string } | undefined> {
    try {
      await endpointActivities(workflowInfo().taskQueue).notifyEndpoint.executeWithOptions(
        {
          ...endpointCall(workflowInfo().taskQueue),
          summary: `notify ${t.endpoint} #${n.sequence} ${n.type}`,
        },
        [{ endpoint: t.endpoint, notification: n }],
      );
      return undefined;
    } catch (err) {
      const type = failureTypeIn(err);
      if (type === NOTIFY_FAILURE_TYPES.endpointGone) return { fate: 'gone', why: `endpoint ${t.endpoint} answered 410 Gone` };
      if (type === NOTIFY_FAILURE_TYPES.endpointUnknown) return { fate: 'failed', why: `endpoint ${t.endpoint} is not configured on the worker` };
      return { fate: 'failed', why: `endpoint ${t.endpoint} failed for ${GIVE_UP_AFTER} (${reasonOf(err)?.message ?? 'no answer'})` };
    }
  }
}

function endpointCall(taskQueue: string): ActivityOptions {
  return {
    taskQueue: notificationsTaskQueue(taskQueue),
    // One HTTP request of at most 10 s per attempt; a worker that dies mid-attempt is noticed here.
    startToCloseTimeout: '20 seconds',
    scheduleToCloseTimeout: GIVE_UP_AFTER,
    // The activity's failures carry their own delay (the schedule, a Retry-After); these apply to
    // timeouts only (a worker that died mid-attempt): short, whatever the attempt count, so a kill
    // after a long outage does not add minutes (measured: 10 min with a 10-minute cap).
    retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumInterval: '30 seconds', nonRetryableErrorTypes: [NOTIFY_FAILURE_TYPES.endpointGone, NOTIFY_FAILURE_TYPES.endpointUnknown] },
  };
}

function endpointActivities(taskQueue: string) {
  return proxyActivities<NotifyActivities>(endpointCall(taskQueue));
}
