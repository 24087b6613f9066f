/**
 * delivery id → reference number, learned from the provider once per delivery. Bounded (least
 * recently used entries go first) and with one lookup in flight per delivery, so a burst of
 * events for a new delivery costs the provider one call, not one per event.
 */
export class ReferenceCache {
  private readonly entries = new Map<string, string>();
  private readonly inFlight = new Map<string, Promise<string | undefined>>();

  constructor(
    private readonly capacity: number,
    private readonly lookup: (deliveryId: string) => Promise<string | undefined>,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  async get(deliveryId: string): Promise<string | undefined> {
    const hit = this.entries.get(deliveryId);
    if (hit !== undefined) {
      this.entries.delete(deliveryId);
      this.entries.set(deliveryId, hit);
      return hit;
    }
    let pending = this.inFlight.get(deliveryId);
    if (!pending) {
      pending = this.lookup(deliveryId).finally(() => this.inFlight.delete(deliveryId));
      this.inFlight.set(deliveryId, pending);
    }
    const reference = await pending;
    if (reference !== undefined) this.set(deliveryId, reference);
    return reference;
  }

  private set(deliveryId: string, reference: string): void {
    this.entries.delete(deliveryId);
    this.entries.set(deliveryId, reference);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
  }
}
