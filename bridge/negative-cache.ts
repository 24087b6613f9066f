/**
 * A bounded set of keys that expire: "this delivery is unknown", "this workflow has ended".
 * A captured signed request can be replayed for the whole 5-minute signature tolerance, and a
 * burst of copies must not turn into one provider GET, or one signal and one describe, each;
 * remembering the answer for a short while makes it one call per key and period. Short, because
 * an unknown delivery may become known (a lagging provider read), and bounded (oldest out) so
 * no stream of distinct keys can grow it.
 */
export class ExpiringSet {
  private readonly until = new Map<string, number>();

  constructor(
    private readonly capacity: number,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.until.size;
  }

  has(key: string): boolean {
    const t = this.until.get(key);
    if (t === undefined) return false;
    if (t > this.now()) return true;
    this.until.delete(key);
    return false;
  }

  add(key: string): void {
    if (this.ttlMs <= 0) return;
    this.until.delete(key);
    this.until.set(key, this.now() + this.ttlMs);
    while (this.until.size > this.capacity) this.until.delete(this.until.keys().next().value!);
  }

  delete(key: string): void {
    this.until.delete(key);
  }
}
