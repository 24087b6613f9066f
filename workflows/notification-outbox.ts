/**
 * The bookkeeping of a delivery's notifications, pure and deterministic (unit-tested without a
 * workflow; the sending is workflows/notifier.ts): one sequence per delivery, the notifications
 * not yet sent to every target, each target's progress, and each notification's fate per target
 * on the timeline entry it belongs to. Carried over continue-as-new by `snapshot()`.
 */
import { sha256 } from '@noble/hashes/sha256';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils';
import type { DeliveryResult, DeliveryState, TimelineEntry, TimelineNotification } from '../contract/delivery-types';
import type { NotificationFate, NotificationType } from '../contract/notification-types';
import type { DeliveryNotification, NotificationChange, NotifiedState, NotifierSnapshot } from '../contract/delivery-types';

export type StopFate = Exclude<NotificationFate, 'pending' | 'sent'>;

/**
 * `dn_<32 hex of SHA-256(workflow ID)>_<sequence>`: the same for every retry, run and worker, and
 * header-safe whatever the reference holds (a webhook-id is an HTTP header).
 */
export function notificationEventId(workflowId: string, sequence: number): string {
  return `dn_${bytesToHex(sha256(utf8ToBytes(workflowId))).slice(0, 32)}_${sequence}`;
}

/** The state as a notification carries it: a copy (the live state moves on), without the timeline. */
export function notifiedState(state: DeliveryState): NotifiedState {
  // eslint-disable-next-line @typescript-eslint/no-unused-vars
  const { timeline, timelineDropped, ...rest } = state;
  return JSON.parse(JSON.stringify(rest)) as NotifiedState;
}

export class NotificationOutbox {
  private sequence: number;
  private readonly unsent: DeliveryNotification[];
  private readonly targets: NotifierSnapshot['targets'];
  /** The `notification` field of each timeline entry still waiting for a fate, by sequence. */
  private readonly fates = new Map<number, TimelineNotification>();

  constructor(
    private readonly workflowId: string,
    targetKeys: readonly string[],
    carried?: NotifierSnapshot,
    timeline: readonly TimelineEntry[] = [],
  ) {
    this.sequence = carried?.sequence ?? 0;
    this.unsent = carried ? [...carried.unsent] : [];
    this.targets = {};
    for (const key of targetKeys) this.targets[key] = carried?.targets[key] ?? { sentUpTo: this.sequence };
    for (const entry of timeline) if (entry.notification && Object.values(entry.notification.to).includes('pending')) this.fates.set(entry.notification.sequence, entry.notification);
  }

  /** Whether anyone is told at all (no target: no notification is made). */
  get hasTargets(): boolean {
    return Object.keys(this.targets).length > 0;
  }

  get activeTargets(): string[] {
    return Object.entries(this.targets)
      .filter(([, t]) => t.stopped === undefined)
      .map(([key]) => key);
  }

  /**
   * Makes the next notification, queues it for every active target, and records it on `entry`
   * (its fate per target starts as pending). Returns undefined when nobody is listening.
   */
  add(type: NotificationType, change: NotificationChange, state: DeliveryState, entry: TimelineEntry, result?: DeliveryResult): DeliveryNotification | undefined {
    const active = this.activeTargets;
    if (active.length === 0) return undefined;
    const sequence = ++this.sequence;
    const n: DeliveryNotification = {
      type,
      eventId: notificationEventId(this.workflowId, sequence),
      sequence,
      reference: state.reference,
      ...(state.deliveryId !== undefined && { deliveryId: state.deliveryId }),
      at: entry.at,
      change: clean(change),
      state: notifiedState(state),
      ...(result && { result: JSON.parse(JSON.stringify(result)) as DeliveryResult }),
    };
    this.unsent.push(n);
    entry.notification = { sequence, type, to: Object.fromEntries(active.map((key) => [key, 'pending' as const])) };
    this.fates.set(sequence, entry.notification);
    return n;
  }

  /** The next notification `target` has not had, if any. */
  next(target: string): DeliveryNotification | undefined {
    const t = this.targets[target];
    if (!t || t.stopped !== undefined) return undefined;
    return this.unsent.find((n) => n.sequence > t.sentUpTo);
  }

  sent(target: string, sequence: number): void {
    this.targets[target]!.sentUpTo = sequence;
    this.setFate(sequence, target, 'sent');
    this.trim();
  }

  /** The target gets nothing more from this delivery: what it has not had takes the stop's fate. */
  stop(target: string, fate: StopFate): void {
    const t = this.targets[target]!;
    t.stopped = fate;
    for (const n of this.unsent) if (n.sequence > t.sentUpTo) this.setFate(n.sequence, target, fate);
    this.trim();
  }

  stoppedWith(target: string): StopFate | undefined {
    return this.targets[target]?.stopped;
  }

  /** Every active target has had every notification. */
  get idle(): boolean {
    return this.activeTargets.every((key) => this.targets[key]!.sentUpTo >= this.sequence);
  }

  snapshot(): NotifierSnapshot {
    return { sequence: this.sequence, unsent: [...this.unsent], targets: JSON.parse(JSON.stringify(this.targets)) as NotifierSnapshot['targets'] };
  }

  private setFate(sequence: number, target: string, fate: NotificationFate): void {
    const record = this.fates.get(sequence);
    if (!record) return; // its timeline entry was dropped (TIMELINE_LIMIT)
    record.to[target] = fate;
    if (!Object.values(record.to).includes('pending')) this.fates.delete(sequence);
  }

  /** Drops what every active target has had. */
  private trim(): void {
    const active = this.activeTargets.map((key) => this.targets[key]!.sentUpTo);
    const upTo = active.length === 0 ? Infinity : Math.min(...active);
    while (this.unsent.length > 0 && this.unsent[0]!.sequence <= upTo) this.unsent.shift();
  }
}

function clean<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
