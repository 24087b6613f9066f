// client/: the client library's public surface for order systems (the `delivery` CLI is beside it, in cli.ts).
export { DeliveryClient, DeliveryNotFoundError, DeliveryRefusedError, DeliveryRequestRejectedError, InvalidInputError } from './delivery-client';
export type { StartOptions, StartedDelivery, DeliverySummary, WatchUpdate } from './delivery-client';
export type { DeliveryOrder, DeliveryState, DeliveryResult, TimelineEntry } from '../contract/delivery-types';
export { parseNotification, verifyNotification, NotificationVerificationError } from './notifications';
export type { NotificationWebhook } from './notifications';
export type { NotificationType, NotifySettings } from '../contract/notification-types';
export type { DeliveryNotification, NotificationChange } from '../contract/delivery-types';
export type { Price, Quote, UpdateDeliveryRequest, FieldIssue } from '../provider/schemas';
