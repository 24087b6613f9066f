// The client library's public surface for order systems.
export { DeliveryClient, DeliveryNotFoundError, DeliveryRequestRejectedError, InvalidInputError } from './delivery-client';
export type { StartOptions, StartedDelivery, DeliverySummary, WatchUpdate } from './delivery-client';
export type { DeliveryOrder, DeliveryState, DeliveryResult, TimelineEntry } from '../contract/delivery-types';
