// contract/: what workflows, activities and clients share (types, messages, failure types and the walk of a failure's causes, IDs, task queues, search attributes); imports only provider/.
/**
 * The delivery's data shapes: its input, state, timeline and result, shared by the workflow, the
 * activities, the bridge, the client library and the CLI. Workflow inputs carry no secrets: keys
 * come from the worker's environment.
 */
import type { CreateDeliveryRequest, DeliveryStatus, DestinationStatus, PackageType, Price, Quote } from '../provider/schemas';
import type { NotificationFate, NotificationType, NotifySettings } from './notification-types';
import type { StatusSearch } from './search-attributes';

/** The order as the order system sends it; `reference_number` is set from the reference. */
export type DeliveryOrder = Omit<CreateDeliveryRequest, 'reference_number'>;

/**
 * When the workflow asks the provider for the truth instead of waiting for webhooks. The
 * provider gives up on a webhook after seven attempts, so silence must not be taken as "nothing
 * happened".
 */
export interface FollowUpSettings {
  /** Fetch the delivery when no webhook has arrived for this long (ms). */
  quietMs: number;
  /** Fetch it when a destination's time window ended this long ago without it ending (ms). */
  windowGraceMs: number;
  /** Each quiet wait is shortened by up to this fraction at random, so quiet deliveries spread out. */
  jitter: number;
  /**
   * After the delivery ends, the workflow stays open up to this long (ms), while an earlier status
   * is missing from its timeline, so that a status arriving late (a webhook retried after an
   * outage) still lands on the timeline and is notified.
   */
  endGraceMs: number;
}

export interface DeliveryWorkflowInput {
  /** Chosen by the order system, unique within its account; the provider's reference_number. The workflow ID is deliveryWorkflowId(reference, account). */
  reference: string;
  /** The courier account the delivery belongs to (contract/accounts.ts); absent: `default`. */
  account?: string;
  order: DeliveryOrder;
  /** The most the order system will pay without a person approving the quote. */
  maxPrice?: Price;
  /** A quote obtained earlier for the same order (`DeliveryClient.quote`): used while valid, no second quote asked for. */
  quote?: CarriedQuote;
  /** How long to wait for approveQuote / rejectQuote when the quote is over maxPrice (ms). */
  approvalTimeoutMs?: number;
  /** Reconciliation timing; defaults in workflows/delivery.ts. */
  followUp?: Partial<FollowUpSettings>;
  /** Continue as new once a run's history has this many events (Temporal may suggest it sooner). */
  historyLimit?: number;
  /** Who is told of every change (contract/notification-types.ts); a child workflow's parent is told by default. */
  notify?: NotifySettings;
  /** Set by the workflow itself when it continues as new: the state it carries over. */
  resume?: ResumeState;
}

/** A quote as `quoteOnly` returns it: with the fingerprint of the inputs it was given for. */
export type CarriedQuote = Quote & { fingerprint: string };

/** Everything the tracker (workflows/state.ts) carries over a continue-as-new. */
export interface TrackerSnapshot {
  state: DeliveryState;
  ranks: Record<string, number>;
  seenEventIds: string[];
}

/** What a delivery carries into its next run: the whole state, timeline included. */
export interface ResumeState {
  tracker: TrackerSnapshot;
  windowsChecked: string[];
  lastSignalAt: number;
  /** Notifications: the sequence and what is still to send. */
  notifier?: NotifierSnapshot;
  /** When DeliveryStatus is upserted, as the first run read it from its worker. */
  statusSearch?: StatusSearch;
}

/** Where a status change came from, shown in the timeline. */
export type ChangeSource = 'provider' | 'webhook' | 'reconciliation';

/** A status change of the delivery or of one destination: the payload of `statusChanged`. */
export interface StatusChange {
  deliveryId: string;
  /** Absent for a change of the delivery itself. */
  destinationId?: string;
  status: DeliveryStatus | DestinationStatus;
  /** The provider's event id, when the change came from a webhook (for duplicate detection). */
  eventId?: string;
  /** When the provider says it happened (ISO 8601). */
  occurredAt?: string;
  source: ChangeSource;
}

export type DeliveryPhase = 'quoting' | 'awaiting_approval' | 'creating' | 'following' | 'cancelling' | 'ended';

export interface TimelineEntry {
  /** Workflow time at which the change was applied (ISO 8601). */
  at: string;
  /** `delivery`, a destination id, or `workflow` for the workflow's own steps. */
  subject: string;
  status?: string;
  note?: string;
  source: ChangeSource | 'workflow';
  eventId?: string;
  occurredAt?: string;
  /** A webhook that came after a later status of the same subject (retried, overtaken); the status did not move back. */
  late?: boolean;
  /** The notification this step made, and its fate per target (`workflow:<id>`, `endpoint:<name>`). */
  notification?: TimelineNotification;
}

export interface TimelineNotification {
  sequence: number;
  type: NotificationType;
  to: Record<string, NotificationFate>;
}

export interface DestinationState {
  id: string;
  status: DestinationStatus;
  trackingUrl: string;
  referenceNumber: string | null;
  packageType: PackageType;
  timeWindowStart: string;
  timeWindowEnd: string;
}

export interface CancellationOutcome {
  requestedAt: string;
  outcome: 'before_creation' | 'cancelled' | 'refused';
  reason?: string;
}

export interface DeliveryState {
  reference: string;
  phase: DeliveryPhase;
  deliveryId?: string;
  status?: DeliveryStatus;
  destinations: DestinationState[];
  quote?: Quote;
  price?: Price;
  isFood: boolean;
  cancellation?: CancellationOutcome;
  /** The newest entries only (TIMELINE_LIMIT in workflows/state.ts); older ones are counted in `timelineDropped`. */
  timeline: TimelineEntry[];
  /** Entries dropped from the front of the timeline, by source; absent until the first is dropped. */
  timelineDropped?: TimelineDropped;
}

export interface TimelineDropped {
  count: number;
  bySource: Partial<Record<TimelineEntry['source'], number>>;
}

/** How many timeline entries a delivery has had in all, dropped ones included (a position for watchers). */
export function timelineTotal(state: Pick<DeliveryState, 'timeline' | 'timelineDropped'>): number {
  return (state.timelineDropped?.count ?? 0) + state.timeline.length;
}

/** What the workflow returns when the delivery has ended. */
export type DeliveryResult = DeliveryState;

// ---------------------------------------------------------------------------------------------
// Notifications: every change an order system cares about, pushed to it (its workflow by signal,
// its HTTP endpoint by signed webhook), so that it never has to poll. One shape for both ways. No
// personal data: ids, statuses, time windows, tracking links and prices only.

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

/** What a delivery's notifications carry over a continue-as-new: the sequence, the unsent ones, each target's progress. */
export interface NotifierSnapshot {
  sequence: number;
  unsent: DeliveryNotification[];
  targets: Record<string, { sentUpTo: number; stopped?: Exclude<NotificationFate, 'pending' | 'sent'> }>;
}
