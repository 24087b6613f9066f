/**
 * Notification webhooks, one activity attempt per HTTP request. Temporal does the retrying: a
 * failed attempt carries its next delay (the Standard Webhooks-like schedule, or a 429's
 * Retry-After), a 410 is final. Endpoints are looked up by name in the worker's configuration,
 * so no address ever comes from a workflow input. Messages name the endpoint, never its URL.
 *
 * An endpoint name is the delivery's account's (notifications/targets.ts): the account is the
 * one the activity's workflow ID names, and the endpoint with its secrets is looked up at each
 * attempt, so a rotated secret or a reloaded registry counts from the next one.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { DeliveryNotification } from '../contract/delivery-types';
import { NOTIFY_FAILURE_TYPES } from '../contract/failures';
import type { NotifyConfig } from '../notifications/config';
import { retryDelayMs } from '../notifications/retry-schedule';
import { NotificationSender } from '../notifications/sender';
import { configTargets, type NotifyTargets } from '../notifications/targets';
import { activityAccount } from './account-of';
import type { NotificationObserver } from '../metrics/worker-metrics';

export interface NotifyActivities {
  notifyEndpoint(args: { endpoint: string; notification: DeliveryNotification }): Promise<void>;
}

/**
 * `observer`: the worker's metrics; `targets`: each account's endpoints (the registry's); left
 * out, the config's endpoints are the `default` account's.
 */
export function createNotifyActivities(config: NotifyConfig, sender = new NotificationSender(), observer?: NotificationObserver, targets: NotifyTargets = configTargets(config)): NotifyActivities {
  return {
    async notifyEndpoint({ endpoint, notification }) {
      const info = Context.current().info;
      const account = activityAccount();
      const whose = ` for account ${account}`;
      let target;
      try {
        target = targets.endpoint(account, endpoint);
      } catch (err) {
        // A secret file that cannot be read now (an operator's mount being replaced): try again on the schedule.
        throw ApplicationFailure.create({ type: NOTIFY_FAILURE_TYPES.endpointFailed, message: `endpoint ${endpoint}${whose}: ${(err as Error).message}`, nextRetryDelay: retryDelayMs(config.retryScheduleMs, info.attempt) });
      }
      // One notification: its workflow's activity; the endpoint label only ever a configured name.
      const observe = (result: 'sent' | 'retried' | 'failed', nextRetryMs?: number) =>
        observer?.attempt({ account, endpoint: target ? endpoint : '(unknown)', key: `${info.workflowExecution?.workflowId}/${info.activityId}`, result, nextRetryMs });
      if (!target) {
        observe('failed');
        // Checked at the start (activities/start-checks.ts); here only if the configuration changed since.
        throw ApplicationFailure.create({ type: NOTIFY_FAILURE_TYPES.endpointUnknown, message: `no notification endpoint named ${endpoint} is configured${whose} on this worker`, nonRetryable: true });
      }
      const outcome = await sender.send(target, notification);
      if (outcome.kind === 'delivered') return observe('sent');
      if (outcome.kind === 'gone') {
        observe('failed');
        throw ApplicationFailure.create({ type: NOTIFY_FAILURE_TYPES.endpointGone, message: `endpoint ${endpoint} answered 410 Gone: no more notifications of this delivery to it`, nonRetryable: true });
      }
      const attempt = info.attempt;
      const nextRetryDelay = retryDelayMs(config.retryScheduleMs, attempt, outcome.retryAfterMs);
      observe('retried', nextRetryDelay);
      throw ApplicationFailure.create({
        type: NOTIFY_FAILURE_TYPES.endpointFailed,
        message: `endpoint ${endpoint} ${outcome.reason} (attempt ${attempt})`,
        nextRetryDelay,
      });
    },
  };
}
