/**
 * Notifications: every change of a delivery that an order system cares about, pushed to it (its
 * workflow by signal, its HTTP endpoint by signed webhook) so that it never has to poll. One shape
 * for both ways; docs/workflow-contract.json describes it for any language. No personal data:
 * ids, statuses, time windows, tracking links and prices only, never names, phones or addresses.
 */
import type { Price, Quote } from '../provider/schemas';
import type { CancellationOutcome, ChangeSource, DeliveryResult, DeliveryState } from './delivery-types';

export const NOTIFICATION_TYPES = [
  'delivery.status_changed',
  'destination.status_changed',
  'destination.tracking_link',
  'quote.awaiting_approval',
  'update.applied',
  'update.refused',
  'cancellation.outcome',
  'delivery.ended',
] as const;
export type NotificationType = (typeof NOTIFICATION_TYPES)[number];

/** The signal an order workflow receives its deliveries' notifications by, unless the start names another. */
export const DEFAULT_NOTIFY_SIGNAL = 'deliveryChanged';

/** Where a delivery's notifications go: named in the start input, never an address. */
export interface NotifySettings {
  /** An order workflow (same namespace) to signal on every change. */
  workflowId?: string;
  /** The signal's name (default `deliveryChanged`). */
  signal?: string;
  /** An HTTP endpoint by the name the operator configured (DELIVERY_NOTIFY_ENDPOINTS), never a URL. */
  endpoint?: string;
  /** A delivery started as a child workflow notifies its parent unless this is false. */
  parent?: boolean;
}

/** What changed, by notification type; fields that do not apply are absent. */
export interface NotificationChange {
  /** `delivery`, a destination id, `quote`, `update` or `cancellation`. */
  subject: string;
  status?: string;
  previousStatus?: string;
  /** A status that came after a later one of the same subject (a retried webhook): recorded, the status did not move back. */
  late?: boolean;
  source?: ChangeSource;
  /** The provider's webhook event id behind a status change, when it came by webhook. */
  providerEventId?: string;
  /** When the provider says it happened (ISO 8601). */
  occurredAt?: string;
  trackingUrl?: string;
  /** quote.awaiting_approval: the quote and the maximum it is over. */
  quote?: Quote;
  maxPrice?: Price;
  /** update.applied: the fields the update changed. */
  fields?: string[];
  /** update.refused and delivery.ended (when not delivered): the failure type. */
  failureType?: string;
  cancellation?: CancellationOutcome;
  /** delivery.ended: how the workflow ended. */
  outcome?: 'completed' | 'cancelled' | 'failed';
}

/** The delivery's state as notifications carry it: the status query's answer without the timeline. */
export type NotifiedState = Omit<DeliveryState, 'timeline' | 'timelineDropped'>;

export interface DeliveryNotification {
  type: NotificationType;
  /** Stable across retries, runs and workers: the webhook's `webhook-id`, for a receiver's de-duplication. */
  eventId: string;
  /** 1, 2, 3, … per delivery, kept across continue-as-new: a receiver applies them in this order. */
  sequence: number;
  reference: string;
  deliveryId?: string;
  /** Workflow time of the change (ISO 8601). */
  at: string;
  change: NotificationChange;
  state: NotifiedState;
  /** delivery.ended only: the workflow's final result (timeline included). */
  result?: DeliveryResult;
}

/** Where a notification went, as the timeline records it: by signal `workflow:<id>`, by webhook `endpoint:<name>`. */
export type NotificationFate = 'pending' | 'sent' | 'not_found' | 'gone' | 'failed';

/** What a delivery's notifications carry over a continue-as-new: the sequence, the unsent ones, each target's progress. */
export interface NotifierSnapshot {
  sequence: number;
  unsent: DeliveryNotification[];
  targets: Record<string, { sentUpTo: number; stopped?: Exclude<NotificationFate, 'pending' | 'sent'> }>;
}
