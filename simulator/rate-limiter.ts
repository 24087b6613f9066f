/**
 * Strict rolling-window rate limiter (contract § Errors and limits, "the strictest reading"):
 * a call is allowed iff fewer than `limit` accepted calls happened in the last `windowMs`.
 * A refused call takes no slot (a 429 does not count against the window).
 *
 * Per key and family it keeps only the timestamps of accepted calls still inside the window,
 * in a ring buffer that never holds more than `limit` entries, so each call is amortised O(1)
 * and memory is bounded by (keys × families × limit). A key may have limits of its own (a
 * registered account's, simulator/accounts.ts); the others share the simulator's.
 */
import type { CallFamily, RateLimit } from '../provider/limits';
import type { Clock } from './clock';

export type RateDecision = { allowed: true } | { allowed: false; retryAfterMs: number };

/** Growable ring of timestamps (starts small so a huge benchmark limit costs nothing up front). */
class TimestampRing {
  private buf: Float64Array;
  private head = 0;
  size = 0;

  /** Raised (never lowered) when the key's limit changes: entries already in the window stay. */
  constructor(public capacity: number) {
    this.buf = new Float64Array(Math.min(capacity, 64));
  }

  oldest(): number {
    return this.buf[this.head] as number;
  }

  shift(): void {
    this.head = (this.head + 1) % this.buf.length;
    this.size--;
  }

  push(t: number): void {
    if (this.size === this.buf.length) this.grow();
    this.buf[(this.head + this.size) % this.buf.length] = t;
    this.size++;
  }

  private grow(): void {
    const next = new Float64Array(Math.max(this.size + 1, Math.min(this.capacity, this.buf.length * 2)));
    for (let i = 0; i < this.size; i++) next[i] = this.buf[(this.head + i) % this.buf.length] as number;
    this.buf = next;
    this.head = 0;
  }
}

/** A call at time ts is inside the window at t iff ts > t - windowMs. */
function prune(ring: TimestampRing, outsideAtOrBefore: number): void {
  while (ring.size > 0 && ring.oldest() <= outsideAtOrBefore) ring.shift();
}

export interface WindowUsage {
  used: number;
  limit: number;
  /** Real milliseconds (already divided by the time scale). */
  windowMs: number;
  freesInMs: number | null;
}

function checkLimits(limits: Readonly<Record<CallFamily, RateLimit>>): void {
  for (const [family, l] of Object.entries(limits)) {
    if (!Number.isInteger(l.limit) || l.limit < 1) throw new RangeError(`rate limit for ${family} must be a positive integer`);
    if (!(l.windowMs > 0)) throw new RangeError(`rate window for ${family} must be positive`);
  }
}

export class RollingWindowLimiter {
  private readonly windows = new Map<string, TimestampRing>();
  private readonly keyLimits = new Map<string, Readonly<Record<CallFamily, RateLimit>>>();

  /** `limits` are in real milliseconds (already divided by the time scale). */
  constructor(
    private readonly limits: Readonly<Record<CallFamily, RateLimit>>,
    private readonly now: Clock,
  ) {
    checkLimits(limits);
  }

  /** A key's own limits (real milliseconds), or undefined for the shared ones; its calls already in a window keep counting. */
  setKeyLimits(key: string, limits: Readonly<Record<CallFamily, RateLimit>> | undefined): void {
    if (limits === undefined) this.keyLimits.delete(key);
    else {
      checkLimits(limits);
      this.keyLimits.set(key, limits);
    }
    for (const [family, l] of Object.entries(limits ?? this.limits) as [CallFamily, RateLimit][]) {
      const ring = this.windows.get(`${family}\u0000${key}`);
      if (ring) ring.capacity = Math.max(ring.capacity, l.limit);
    }
  }

  private limitsOf(key: string): Readonly<Record<CallFamily, RateLimit>> {
    return this.keyLimits.get(key) ?? this.limits;
  }

  /** Takes a slot if one is free, else says how long until the oldest call leaves the window. */
  tryAcquire(key: string, family: CallFamily): RateDecision {
    const { limit, windowMs } = this.limitsOf(key)[family];
    const t = this.now();
    const id = `${family}\u0000${key}`;
    let ring = this.windows.get(id);
    if (!ring) {
      ring = new TimestampRing(limit);
      this.windows.set(id, ring);
    }
    prune(ring, t - windowMs);
    if (ring.size < limit) {
      ring.push(t);
      return { allowed: true };
    }
    return { allowed: false, retryAfterMs: ring.oldest() + windowMs - t };
  }

  /**
   * What the /_sim dashboard's gauges show: calls inside the window now and, when any, real ms
   * until the oldest leaves it. Takes no slot.
   */
  usage(key: string, family: CallFamily): WindowUsage {
    const { limit, windowMs } = this.limitsOf(key)[family];
    const ring = this.windows.get(`${family}\u0000${key}`);
    const t = this.now();
    if (ring) prune(ring, t - windowMs);
    if (!ring || ring.size === 0) return { used: 0, limit, windowMs, freesInMs: null };
    return { used: ring.size, limit, windowMs, freesInMs: ring.oldest() + windowMs - t };
  }

  reset(): void {
    this.windows.clear();
  }
}

/** The 429 headers: `Retry-After` in whole seconds (rounded up), `Retry-After-Ms` exact (extension). */
export function retryAfterHeaders(retryAfterMs: number): Record<string, string> {
  const ms = Math.max(1, Math.ceil(retryAfterMs));
  return { 'retry-after': String(Math.max(1, Math.ceil(ms / 1000))), 'retry-after-ms': String(ms) };
}
