/**
 * The bridge's two small memories, both bounded so no stream of input can grow them:
 * - DeliveredEvents: event id → workflow ID of events whose signal was delivered (least recently
 *   used first out). A provider retry of an event we already acknowledged (our 200 got lost, or
 *   the provider duplicated it) is answered from here without a second signal. The workflow
 *   dedups by event id too; this is only the fast path, so forgetting an id is harmless.
 * - RecentWebhooks: the last N webhook requests as the operators' page shows them.
 */
import type { WebhookOutcome } from './outcomes';

export class DeliveredEvents {
  private readonly ids = new Map<string, string>();

  constructor(private readonly capacity: number) {}

  get size(): number {
    return this.ids.size;
  }

  /** The workflow the event went to, if it was delivered (and not forgotten since). */
  get(eventId: string): string | undefined {
    const workflowId = this.ids.get(eventId);
    if (workflowId !== undefined) {
      this.ids.delete(eventId);
      this.ids.set(eventId, workflowId);
    }
    return workflowId;
  }

  add(eventId: string, workflowId: string): void {
    this.ids.delete(eventId);
    this.ids.set(eventId, workflowId);
    if (this.ids.size > this.capacity) this.ids.delete(this.ids.keys().next().value!);
  }
}

/** One webhook request as operators see it: nothing from the request but the webhook-id header and the verified event. */
export interface WebhookRecord {
  at: number;
  /** The webhook-id header (unverified when the outcome is `rejected`), cut to a sane length. */
  eventId?: string;
  type?: string;
  deliveryId?: string;
  status?: string;
  httpStatus: number;
  outcome: WebhookOutcome;
  reason?: string;
  workflowId?: string;
  ms: number;
}

export class RecentWebhooks {
  private readonly ring: WebhookRecord[] = [];
  private next = 0;

  constructor(private readonly capacity: number) {}

  push(record: WebhookRecord): void {
    if (this.ring.length < this.capacity) this.ring.push(record);
    else this.ring[this.next] = record;
    this.next = (this.next + 1) % this.capacity;
  }

  /** Newest first. */
  list(): WebhookRecord[] {
    const oldestFirst = this.ring.length < this.capacity ? this.ring : [...this.ring.slice(this.next), ...this.ring.slice(0, this.next)];
    return [...oldestFirst].reverse();
  }
}
