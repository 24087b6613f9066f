/**
 * The delivery's state and the monotonic state machine that moves it. Pure and deterministic
 * (the caller passes the time), so it runs inside the workflow and in plain unit tests.
 *
 * Rules: a status moves only forward along the provider's lifecycle; a repeated or older status
 * changes nothing (an older one from a webhook is kept in the timeline as late); an unknown
 * (future) status is kept and shown, without moving the lifecycle position, so a later known
 * status still applies if it is further along.
 */
import { deliveryRank, destinationRank, earlierDeliveryStatuses, earlierDestinationStatuses, isTerminalDelivery } from '../provider/lifecycle';
import type { DeliveryRecord } from '../provider/schemas';
import type { ChangeSource, DeliveryState, DeliveryWorkflowInput, StatusChange, TimelineEntry, TrackerSnapshot } from '../contract/delivery-types';

export type ChangeOutcome = 'applied' | 'late' | 'duplicate' | 'stale' | 'other_delivery' | 'unknown_destination';

/** A change an order system is told of (workflows/notifier.ts): a status applied or kept late, a destination learnt with its tracking link. */
export type TrackedChange =
  | { kind: 'status'; entry: TimelineEntry; previousStatus?: string }
  | { kind: 'destination'; entry: TimelineEntry; trackingUrl: string };

/**
 * Timeline entries kept: the newest 500, the older ones only counted (state.timelineDropped).
 * The timeline travels in every query answer and through continue-as-new; unbounded, one note
 * per reconciliation grew the carried input to about 2 MB in five hours at the shortest interval.
 * 500 hold every status step of a delivery with the contract's 100 destinations (three or four
 * each) and its own notes; 500 entries are about 75 KB.
 */
export const TIMELINE_LIMIT = 500;

/** How many webhook event ids are remembered for duplicate detection (bounded memory). */
export const SEEN_EVENT_IDS_LIMIT = 2_000;

export class DeliveryTracker {
  readonly state: DeliveryState;
  /** Lifecycle position of the last known status per subject ('delivery' or a destination id). */
  private readonly ranks: Record<string, number>;
  private readonly seenOrder: string[];
  private readonly seen: Set<string>;
  /** Called for every change worth telling (after it is on the timeline). */
  onChange?: (change: TrackedChange) => void;

  constructor(snapshot: TrackerSnapshot) {
    this.state = snapshot.state;
    this.ranks = snapshot.ranks;
    this.seenOrder = snapshot.seenEventIds;
    this.seen = new Set(snapshot.seenEventIds);
  }

  static start(input: DeliveryWorkflowInput): DeliveryTracker {
    return new DeliveryTracker({
      state: { reference: input.reference, phase: 'quoting', destinations: [], isFood: input.order.is_food, timeline: [] },
      ranks: {},
      seenEventIds: [],
    });
  }

  snapshot(): TrackerSnapshot {
    return { state: this.state, ranks: this.ranks, seenEventIds: [...this.seenOrder] };
  }

  get ended(): boolean {
    return this.state.status !== undefined && isTerminalDelivery(this.state.status);
  }

  /**
   * Whether a webhook could still add to the timeline: one that is late is kept only when it is an
   * earlier step of a lifecycle that is not on the timeline yet. Every earlier step of the delivery
   * and of each destination on the timeline (from webhooks or reads), none can; an unknown status,
   * or a timeline that has dropped entries, cannot tell.
   */
  get mayHearLate(): boolean {
    const s = this.state;
    if (s.status === undefined || s.timelineDropped) return true;
    const onTimeline = (subject: string, steps: readonly string[] | undefined) => steps !== undefined && steps.every((status) => s.timeline.some((t) => t.subject === subject && t.status === status));
    return !onTimeline('delivery', earlierDeliveryStatuses(s.status)) || s.destinations.some((d) => !onTimeline(d.id, earlierDestinationStatuses(d.status)));
  }

  /** The workflow's own step; the entry is returned so that a notification can be attached to it. */
  note(now: Date, note: string): TimelineEntry {
    return this.push({ at: now.toISOString(), subject: 'workflow', note, source: 'workflow' });
  }

  /** Takes in a full record from the provider (after create, update or a fetch). */
  applyRecord(record: DeliveryRecord, source: ChangeSource, now: Date): void {
    const s = this.state;
    s.deliveryId = record.id;
    s.price = record.price;
    s.isFood = record.is_food;
    for (const d of record.destinations) {
      const known = s.destinations.find((x) => x.id === d.id);
      const fields = {
        trackingUrl: d.tracking_url,
        referenceNumber: d.reference_number,
        packageType: d.package_type,
        timeWindowStart: d.time_window_start,
        timeWindowEnd: d.time_window_end,
      };
      if (known) {
        const newLink = known.trackingUrl !== d.tracking_url;
        Object.assign(known, fields);
        if (newLink) this.onChange?.({ kind: 'destination', entry: this.push({ at: now.toISOString(), subject: d.id, note: 'new tracking link', source }), trackingUrl: d.tracking_url });
      } else {
        s.destinations.push({ id: d.id, status: d.status, ...fields });
        this.setRank(d.id, destinationRank(d.status));
        const entry = this.push({ at: now.toISOString(), subject: d.id, status: d.status, source, occurredAt: d.updated_at });
        this.onChange?.({ kind: 'destination', entry, trackingUrl: d.tracking_url });
        continue;
      }
      this.apply({ deliveryId: record.id, destinationId: d.id, status: d.status, occurredAt: d.updated_at, source }, now);
    }
    this.apply({ deliveryId: record.id, status: record.status, occurredAt: record.updated_at, source }, now);
  }

  /**
   * Changes that came before the delivery's id was known, in the order the provider made them
   * (event time, then lifecycle position): a retried webhook arrives after later ones.
   */
  applyInProviderOrder(changes: readonly StatusChange[], now: Date): void {
    const time = (c: StatusChange) => (c.occurredAt === undefined ? Infinity : Date.parse(c.occurredAt));
    const rank = (c: StatusChange) => rankOf(c) ?? Infinity;
    const ordered = [...changes].sort((a, b) => time(a) - time(b) || rank(a) - rank(b) || 0);
    for (const change of ordered) this.apply(change, now);
  }

  /** One status change, from a webhook or a fetch. */
  apply(change: StatusChange, now: Date): ChangeOutcome {
    if (change.eventId !== undefined && this.seen.has(change.eventId)) return 'duplicate';
    const outcome = this.applyOnce(change, now);
    if (change.eventId !== undefined) this.remember(change.eventId);
    return outcome;
  }

  private applyOnce(change: StatusChange, now: Date): ChangeOutcome {
    const s = this.state;
    if (change.deliveryId !== s.deliveryId) return 'other_delivery';
    const subject = change.destinationId ?? 'delivery';
    let current: string | undefined;
    if (change.destinationId === undefined) current = s.status;
    else {
      const d = s.destinations.find((x) => x.id === change.destinationId);
      if (!d) return 'unknown_destination';
      current = d.status;
    }
    if (current === change.status) return 'duplicate';
    const rank = rankOf(change);
    const knownRank = this.ranks[subject];
    const late = rank !== undefined && knownRank !== undefined && rank <= knownRank;
    if (late) {
      // The contract does not promise order: a webhook retried after an outage comes after later
      // ones. An earlier step of the lifecycle still tells when it happened, so it is kept, marked
      // late, status unmoved. An older record (a read behind a webhook) tells nothing new, and a
      // rival end (DELIVERED after CANCELED) is no earlier step.
      const earlierStep = rank < knownRank && change.source === 'webhook';
      if (!earlierStep || this.state.timeline.some((t) => t.subject === subject && t.status === change.status)) return 'stale';
    } else {
      if (change.destinationId === undefined) s.status = change.status;
      else s.destinations.find((x) => x.id === change.destinationId)!.status = change.status;
      this.setRank(subject, rank);
    }
    const entry = this.push({ at: now.toISOString(), subject, status: change.status, source: change.source, eventId: change.eventId, occurredAt: change.occurredAt, ...(late && { late }) });
    this.onChange?.({ kind: 'status', entry, previousStatus: current });
    return late ? 'late' : 'applied';
  }

  private setRank(subject: string, rank: number | undefined): void {
    if (rank !== undefined) this.ranks[subject] = rank;
  }

  private remember(eventId: string): void {
    this.seen.add(eventId);
    this.seenOrder.push(eventId);
    if (this.seenOrder.length > SEEN_EVENT_IDS_LIMIT) this.seen.delete(this.seenOrder.shift()!);
  }

  private push(entry: TimelineEntry): TimelineEntry {
    // Drop undefined fields so the history and query output stay compact.
    const clean = Object.fromEntries(Object.entries(entry).filter(([, v]) => v !== undefined)) as unknown as TimelineEntry;
    const timeline = this.state.timeline;
    timeline.push(clean);
    while (timeline.length > TIMELINE_LIMIT) {
      const dropped = timeline.shift()!;
      const d = (this.state.timelineDropped ??= { count: 0, bySource: {} });
      d.count++;
      d.bySource[dropped.source] = (d.bySource[dropped.source] ?? 0) + 1;
    }
    return clean;
  }
}

/** A change's position in its subject's lifecycle (the delivery's or a destination's), or undefined for an unknown status. */
function rankOf(change: StatusChange): number | undefined {
  return change.destinationId === undefined ? deliveryRank(change.status) : destinationRank(change.status);
}
