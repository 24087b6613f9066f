/**
 * Status moves of a stored delivery (provider/lifecycle.ts) with their side effects: every change
 * of the delivery or of one destination emits exactly one webhook event, and the order follows
 * the delivery (INVOICED when DELIVERED, CANCELED when cancelled). Setting a status equal to the
 * current one is no change and emits nothing.
 */
import { isTerminalDelivery, isTerminalDestination, nextDeliveryStatus, isKnownDeliveryStatus } from '../provider/lifecycle';
import type { DestinationRecord } from '../provider/schemas';
import { type Clock, iso } from './clock';
import type { StoredDelivery } from './store';
import type { EventInput } from './webhooks';

export interface LifecycleDeps {
  now: Clock;
  emit: (event: EventInput) => void;
  /** Called once a delivery reaches a terminal status (stops its auto-advance timer). */
  onTerminal: (sd: StoredDelivery) => void;
}

const DONE_FOR_DELIVERY = new Set(['DELIVERED', 'FAILED']);

export class Lifecycle {
  constructor(private readonly deps: LifecycleDeps) {}

  /** Sets the delivery status (any string: tests may send unknown future values). */
  setDelivery(sd: StoredDelivery, status: string): boolean {
    const r = sd.record;
    if (r.status === status) return false;
    const at = iso(this.deps.now());
    r.status = status;
    r.updated_at = at;
    this.deps.emit({ type: 'delivery.status_changed', delivery_id: r.id, status });
    // Destinations follow the known milestones of their delivery.
    if (status === 'PICKED_UP') {
      for (const d of r.destinations) if (d.status === 'PENDING') this.setDestination(sd, d, 'IN_TRANSIT', false);
    } else if (status === 'DELIVERED' || status === 'CANCELED') {
      for (const d of r.destinations) if (!isTerminalDestination(d.status)) this.setDestination(sd, d, status, false);
      if (sd.order.status === 'OPEN') sd.order.status = status === 'DELIVERED' ? 'INVOICED' : 'CANCELED';
    }
    if (isTerminalDelivery(status)) this.deps.onTerminal(sd);
    return true;
  }

  /**
   * Sets one destination's status; the delivery becomes DELIVERED once every destination is
   * DELIVERED or FAILED (unless it is already terminal). `complete` is false while the delivery
   * itself is cascading a change down, to avoid recursion.
   */
  setDestination(sd: StoredDelivery, d: DestinationRecord, status: string, complete = true): boolean {
    if (d.status === status) return false;
    const at = iso(this.deps.now());
    d.status = status;
    d.updated_at = at;
    sd.record.updated_at = at;
    this.deps.emit({ type: 'destination.status_changed', delivery_id: sd.record.id, destination_id: d.id, status });
    if (complete && !isTerminalDelivery(sd.record.status) && sd.record.destinations.every((x) => DONE_FOR_DELIVERY.has(x.status))) {
      this.setDelivery(sd, 'DELIVERED');
    }
    return true;
  }

  /**
   * One step on the happy path: CREATED → ASSIGNED → UPCOMING → PICKED_UP, then one destination
   * at a time to DELIVERED, and the delivery with the last one. False when there is no next step
   * (terminal, or an unknown status).
   */
  step(sd: StoredDelivery): boolean {
    const status = sd.record.status;
    if (!isKnownDeliveryStatus(status) || isTerminalDelivery(status)) return false;
    if (status !== 'PICKED_UP') {
      const next = nextDeliveryStatus(status);
      return next !== undefined && this.setDelivery(sd, next);
    }
    const open = sd.record.destinations.find((d) => !isTerminalDestination(d.status));
    if (open) return this.stepDestination(sd, open);
    return this.setDelivery(sd, 'DELIVERED');
  }

  /** One step of one destination: PENDING → IN_TRANSIT → DELIVERED. */
  stepDestination(sd: StoredDelivery, d: DestinationRecord): boolean {
    if (isTerminalDestination(d.status)) return false;
    return this.setDestination(sd, d, d.status === 'PENDING' ? 'IN_TRANSIT' : 'DELIVERED');
  }
}

/**
 * Auto mode: each delivery moves one step per interval (real ms, already scaled) from its
 * creation until it is terminal. One timer per active delivery; when each one is due is kept
 * (wall-clock ms) so a simulator with a state file can resume the pace after a restart.
 */
export class AutoAdvancer {
  private readonly timers = new Map<string, { timer: NodeJS.Timeout; at: number }>();

  constructor(
    private readonly intervalMs: number,
    private readonly step: (sd: StoredDelivery) => boolean,
    private readonly onError: (message: string) => void,
  ) {}

  get enabled(): boolean {
    return this.intervalMs > 0;
  }

  get interval(): number {
    return this.intervalMs;
  }

  /** Schedules the delivery's next step in `delayMs` real ms (default: one interval). */
  track(sd: StoredDelivery, delayMs = this.intervalMs): void {
    if (!this.enabled) return;
    this.stop(sd.record.id);
    const timer = setTimeout(() => {
      this.timers.delete(sd.record.id);
      try {
        if (this.step(sd) && !isTerminalDelivery(sd.record.status)) this.track(sd);
      } catch (e) {
        this.onError(`auto-advance failed for ${sd.record.id}: ${String(e)}`);
      }
    }, delayMs);
    // Real time (not the injectable clock): timers run on it.
    this.timers.set(sd.record.id, { timer, at: Date.now() + delayMs });
  }

  /** When the delivery's next step is due (Date.now() ms), or undefined when none is scheduled. */
  dueAt(id: string): number | undefined {
    return this.timers.get(id)?.at;
  }

  stop(id: string): void {
    const t = this.timers.get(id);
    if (t) clearTimeout(t.timer);
    this.timers.delete(id);
  }

  clear(): void {
    for (const t of this.timers.values()) clearTimeout(t.timer);
    this.timers.clear();
  }
}
