/**
 * Log lines for rejected requests, at a bounded rate: anyone on the internet can send junk to
 * the webhook listener, and one line per request would let them fill the disk and bury the lines
 * that matter. The first `perWindow` lines of each window are written; the rest are counted and
 * summed up in one line when the next window starts (the metrics count every request anyway).
 */
export class BoundedLog {
  private windowStart = -Infinity;
  private written = 0;
  private suppressed = 0;

  constructor(
    private readonly write: (entry: Record<string, unknown>) => void,
    private readonly perWindow: number,
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
    private readonly onSuppressed: () => void = () => undefined,
  ) {}

  log(entry: Record<string, unknown>): void {
    const t = this.now();
    if (t - this.windowStart >= this.windowMs) {
      if (this.suppressed > 0) this.write({ msg: 'rejected webhooks not logged', count: this.suppressed, window_ms: this.windowMs });
      this.windowStart = t;
      this.written = 0;
      this.suppressed = 0;
    }
    if (this.written < this.perWindow) {
      this.written++;
      this.write(entry);
    } else {
      this.suppressed++;
      this.onSuppressed();
    }
  }
}
