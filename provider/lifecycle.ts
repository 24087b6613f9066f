/**
 * The provider's status lifecycle (contract § Statuses), shared by the simulator (which moves
 * deliveries along it) and the workflows (which only ever move forward along it).
 */
import type { DeliveryStatus, DestinationStatus, KnownDeliveryStatus, KnownDestinationStatus } from './schemas';

/** Forward order of delivery statuses. CANCELED and DELIVERED are terminal. */
const DELIVERY_RANK: Record<KnownDeliveryStatus, number> = {
  CREATED: 0,
  ASSIGNED: 1,
  UPCOMING: 2,
  PICKED_UP: 3,
  DELIVERED: 4,
  CANCELED: 4,
};
const DESTINATION_RANK: Record<KnownDestinationStatus, number> = {
  PENDING: 0,
  IN_TRANSIT: 1,
  DELIVERED: 2,
  FAILED: 2,
  CANCELED: 2,
};

export const TERMINAL_DELIVERY_STATUSES: readonly KnownDeliveryStatus[] = ['DELIVERED', 'CANCELED'];
export const TERMINAL_DESTINATION_STATUSES: readonly KnownDestinationStatus[] = ['DELIVERED', 'FAILED', 'CANCELED'];

export function isKnownDeliveryStatus(s: string): s is KnownDeliveryStatus {
  return Object.prototype.hasOwnProperty.call(DELIVERY_RANK, s);
}
export function isKnownDestinationStatus(s: string): s is KnownDestinationStatus {
  return Object.prototype.hasOwnProperty.call(DESTINATION_RANK, s);
}

/** Rank of a status in its lifecycle, or undefined for an unknown (future) value. */
export function deliveryRank(s: DeliveryStatus): number | undefined {
  return isKnownDeliveryStatus(s) ? DELIVERY_RANK[s] : undefined;
}
export function destinationRank(s: DestinationStatus): number | undefined {
  return isKnownDestinationStatus(s) ? DESTINATION_RANK[s] : undefined;
}

export function isTerminalDelivery(s: DeliveryStatus): boolean {
  return (TERMINAL_DELIVERY_STATUSES as readonly string[]).includes(s);
}
export function isTerminalDestination(s: DestinationStatus): boolean {
  return (TERMINAL_DESTINATION_STATUSES as readonly string[]).includes(s);
}

/** The known statuses before `s` in its lifecycle (the steps a webhook could still bring late), or undefined for an unknown status. */
export function earlierDeliveryStatuses(s: DeliveryStatus): KnownDeliveryStatus[] | undefined {
  const rank = deliveryRank(s);
  return rank === undefined ? undefined : (Object.keys(DELIVERY_RANK) as KnownDeliveryStatus[]).filter((x) => DELIVERY_RANK[x] < rank);
}
export function earlierDestinationStatuses(s: DestinationStatus): KnownDestinationStatus[] | undefined {
  const rank = destinationRank(s);
  return rank === undefined ? undefined : (Object.keys(DESTINATION_RANK) as KnownDestinationStatus[]).filter((x) => DESTINATION_RANK[x] < rank);
}

/** The contract: PATCH is allowed while CREATED or ASSIGNED, else 409. */
export function canUpdate(s: DeliveryStatus): boolean {
  return s === 'CREATED' || s === 'ASSIGNED';
}
/** The contract: cancel is allowed before PICKED_UP, else 409. */
export function canCancel(s: DeliveryStatus): boolean {
  return s === 'CREATED' || s === 'ASSIGNED' || s === 'UPCOMING';
}

/** The next status on the happy path, or undefined at the end. */
export function nextDeliveryStatus(s: KnownDeliveryStatus): KnownDeliveryStatus | undefined {
  const order: KnownDeliveryStatus[] = ['CREATED', 'ASSIGNED', 'UPCOMING', 'PICKED_UP', 'DELIVERED'];
  const i = order.indexOf(s);
  return i >= 0 && i < order.length - 1 ? order[i + 1] : undefined;
}
