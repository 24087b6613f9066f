/**
 * Append-only log that keeps only the newest `cap` entries (the request and webhook-attempt
 * logs would otherwise grow without bound under a benchmark). Indexes keep counting across
 * trimming so `?since=<index>` reads stay incremental.
 */
export class CappedLog<T extends object> {
  private items: (T & { index: number })[] = [];
  private first = 0;

  constructor(private readonly cap: number) {
    if (!Number.isInteger(cap) || cap < 1) throw new RangeError('log cap must be a positive integer');
  }

  push(entry: T): T & { index: number } {
    const stored = { index: this.first + this.items.length, ...entry };
    this.items.push(stored);
    // Trim in chunks of 10 % so trimming costs O(1) amortised per push.
    if (this.items.length >= this.cap + Math.ceil(this.cap / 10)) {
      const drop = this.items.length - this.cap;
      this.items.splice(0, drop);
      this.first += drop;
    }
    return stored;
  }

  /** Entries with index >= since (oldest first), at most `limit`, and the index to ask for next. */
  since(since = 0, limit = Number.POSITIVE_INFINITY): { entries: (T & { index: number })[]; next: number } {
    const start = Math.max(0, since - this.first);
    const entries = this.items.slice(start, start + Math.min(limit, this.items.length));
    const last = entries[entries.length - 1];
    return { entries, next: last ? last.index + 1 : Math.max(since, this.first + this.items.length) };
  }

  get length(): number {
    return this.items.length;
  }

  /** The index the next entry gets. */
  get next(): number {
    return this.first + this.items.length;
  }

  /** Makes an empty log count on from `index` (a simulator restored from its state file). */
  continueFrom(index: number): void {
    if (this.items.length > 0) throw new Error('continueFrom needs an empty log');
    this.first = index;
  }

  clear(): void {
    this.items = [];
    this.first = 0;
  }
}
