/**
 * Notifications' names: their types, the default signal, where they go (a start's `notify`) and
 * their fates. The notification itself, which carries the delivery's state, is a delivery type
 * (contract/delivery-types.ts, `DeliveryNotification`): docs/notifications.md.
 */

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

/** Where a notification went, as the timeline records it: by signal `workflow:<id>`, by webhook `endpoint:<name>`. */
export type NotificationFate = 'pending' | 'sent' | 'not_found' | 'gone' | 'failed';

