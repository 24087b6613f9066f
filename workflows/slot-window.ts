/**
 * The bookkeeping of a window-exact limiter: which requests wait, which hold a slot, when each
 * used slot may be used again, and which quotes may be handed out again. Pure and deterministic
 * (no timers, no I/O): the limiter workflow drives it, unit tests drive it with plain numbers.
 *
 * Why window-exact: the provider counts calls over a rolling window (20 creations in any 60 s).
 * A call reaches the provider no later than its answer comes back, so a slot used by a call
 * answered at time `a` may be used again from `a + window + margin`: then no window at the
 * provider ever holds more than `limit` calls, whatever the network did, and all `limit` slots
 * can be used at once when a window opens (a token bucket must spread them out instead).
 */
import type { Quote } from '../provider/schemas';
import type { RateLimit } from '../provider/limits';

export interface SlotRequest {
  /** `<requesting workflow id>#<n>`: the answer goes back to that workflow. */
  requestId: string;
  food: boolean;
  /** Quotes only: identical inputs share one quote while it is valid. */
  fingerprint?: string;
  /** When the order first asked; a retry keeps its place in the queue. */
  requestedAt: number;
}

export interface Grant extends SlotRequest {
  grantedAt: number;
  /** The call must not reach the provider before this (the slot's reuse time). */
  notBefore: number;
  /** A holder that never reports back (its workflow was terminated) loses the slot then. */
  leaseUntil: number;
}

export interface LimiterConfig extends RateLimit {
  marginMs: number;
  /** How long a granted slot may be held without a release before it is taken back. */
  leaseMs: number;
  /** A cached quote is handed out only while it has at least this much of its life left. */
  quoteMinRemainingMs: number;
  /**
   * A slot that frees within this long is granted now, to be used from `notBefore`: the grant's
   * way to the worker (timer, signal, workflow task, activity task) is then travelled before the
   * slot frees instead of after, and the call waits the rest in the activity.
   */
  leadMs: number;
}

/**
 * How a call ended, as far as pacing goes: `answered` (any definite answer, success or refusal),
 * `unavailable` (a 5xx answer), `unreachable` (no answer: connection refused, timed out),
 * `rate_limited` (a 429 after all), `unclear` (the worker died or the activity timed out: the
 * call may or may not have reached the provider).
 *
 * Which calls hold their slot for a window: every call that may have been counted. A 429 is not
 * counted (contract), and neither, we assume, is a 5xx answer: the provider did not serve the
 * call. Were the provider to count them after all, the worst case is a 429, and a 429 pauses the
 * family until its Retry-After.
 */
export type CallOutcome = 'answered' | 'unavailable' | 'unreachable' | 'rate_limited' | 'unclear';

const NOT_COUNTED: readonly CallOutcome[] = ['rate_limited', 'unavailable'];

/** What the holder reports when its call is over. */
export interface SlotRelease {
  requestId: string;
  /** When the answer (or the failure) came back: the call reached the provider before this. */
  answeredAt: number;
  outcome: CallOutcome;
  /** With `rate_limited`: the provider's Retry-After. */
  retryAfterMs?: number;
  /** The quote the call obtained, to hand to identical requests while it is valid. */
  quote?: Quote;
}

/** What a waiting request receives: a slot to use, or a still-valid quote for identical inputs. */
export type SlotAnswer = { requestId: string; slot: true; notBefore: number } | { requestId: string; slot: false; quote: Quote };

export interface SlotWindowSnapshot {
  config: LimiterConfig;
  waiting: SlotRequest[];
  held: Grant[];
  /** For each used slot, when it may be used again (ascending). */
  busyUntil: number[];
  /** Requests waiting for the quote an identical in-flight request is about to get. */
  followers: SlotRequest[];
  quotes: { fingerprint: string; quote: Quote }[];
  /** Outage handling: no grants until `until`; while `probing`, one call at a time. */
  pause: { until: number; unavailableInARow: number; probing: boolean };
  counts: { granted: number; reused: number; expired: number; paused: number };
}

/** This many `unavailable` answers in a row mean an outage: stop and probe with one call. */
export const OUTAGE_AFTER = 3;
const PROBE_BASE_MS = 1_000;
const PROBE_MAX_MS = 60_000;

const QUOTE_CACHE_LIMIT = 2_000;

export class SlotWindow {
  readonly s: SlotWindowSnapshot;

  constructor(snapshot: SlotWindowSnapshot) {
    this.s = snapshot;
  }

  static empty(config: LimiterConfig): SlotWindow {
    return new SlotWindow({
      config,
      waiting: [],
      held: [],
      busyUntil: [],
      followers: [],
      quotes: [],
      pause: { until: 0, unavailableInARow: 0, probing: false },
      counts: { granted: 0, reused: 0, expired: 0, paused: 0 },
    });
  }

  configure(config: LimiterConfig): void {
    this.s.config = config;
  }

  /** Queues a request, or answers it at once from the quote cache (returned answers go out now). */
  request(req: SlotRequest, now: number): SlotAnswer[] {
    if ([...this.s.waiting, ...this.s.held, ...this.s.followers].some((r) => r.requestId === req.requestId)) return []; // a repeated signal
    if (req.fingerprint !== undefined) {
      const cached = this.cachedQuote(req.fingerprint, now);
      if (cached) {
        this.s.counts.reused++;
        return [{ requestId: req.requestId, slot: false, quote: cached }];
      }
      // An identical request is already asking: wait for its quote instead of asking again.
      if ([...this.s.waiting, ...this.s.held].some((r) => r.fingerprint === req.fingerprint)) {
        this.s.followers.push(req);
        return [];
      }
    }
    this.enqueue(req);
    return [];
  }

  /** A holder's call is over: its slot is busy for one more window from the answer. */
  release(rel: SlotRelease, now: number): SlotAnswer[] {
    const i = this.s.held.findIndex((g) => g.requestId === rel.requestId);
    if (i < 0) return []; // already released, or taken back at the end of its lease
    const [grant] = this.s.held.splice(i, 1) as [Grant];
    if (!NOT_COUNTED.includes(rel.outcome)) this.markBusy(rel.answeredAt);
    this.learn(rel, now);
    return grant.fingerprint === undefined ? [] : this.settleFollowers(grant.fingerprint, rel.quote, now);
  }

  /** A waiting or holding request no longer wants its slot (its workflow was cancelled). */
  withdraw(requestId: string, now: number): SlotAnswer[] {
    this.s.waiting = this.s.waiting.filter((r) => r.requestId !== requestId);
    this.s.followers = this.s.followers.filter((r) => r.requestId !== requestId);
    return this.release({ requestId, answeredAt: now, outcome: 'unclear' }, now);
  }

  /**
   * Another family's probe was just answered: the provider is back. An outage pause here ends now
   * instead of at this family's next probe, whose pause may have grown to many seconds by the
   * time the outage ended. The next call is still a single probe (an outage may have hit some
   * endpoints only); a 429's pause is this family's own and stays.
   */
  providerBack(now: number): void {
    const p = this.s.pause;
    if (p.probing && p.until > now) p.until = now;
  }

  /** Hands out every slot free now or within the lead time: food first, then in order of arrival. */
  grant(now: number): Grant[] {
    this.expire(now);
    const out: Grant[] = [];
    if (now < this.s.pause.until) return out;
    const horizon = now + this.lead();
    while (this.s.waiting.length > 0) {
      if (this.s.pause.probing && this.s.held.length > 0) break; // one probe at a time
      const neverUsed = this.s.config.limit - this.s.held.length - this.s.busyUntil.length;
      let notBefore = now;
      if (neverUsed <= 0) {
        if (this.s.busyUntil.length === 0 || this.s.busyUntil[0]! > horizon) break;
        notBefore = this.s.busyUntil.shift()!;
      }
      const food = this.s.waiting.findIndex((r) => r.food);
      const [req] = this.s.waiting.splice(food >= 0 ? food : 0, 1) as [SlotRequest];
      const g: Grant = { ...req, grantedAt: now, notBefore, leaseUntil: notBefore + this.s.config.leaseMs };
      this.s.held.push(g);
      this.s.counts.granted++;
      out.push(g);
    }
    return out;
  }

  /** The grant could not be delivered (its workflow is gone): the slot was never used. */
  undeliverable(requestId: string, now: number): SlotAnswer[] {
    const i = this.s.held.findIndex((g) => g.requestId === requestId);
    if (i < 0) return [];
    const [grant] = this.s.held.splice(i, 1) as [Grant];
    return grant.fingerprint === undefined ? [] : this.settleFollowers(grant.fingerprint, undefined, now);
  }

  /**
   * Slots free at `now`, without changing anything (the limiter's status query calls it, and a
   * query must not change workflow state). A lease that has ended still counts: it turns into a
   * used slot at the next grant.
   */
  free(now: number): number {
    return this.s.config.limit - this.s.held.length - this.s.busyUntil.filter((t) => t > now).length;
  }

  /** When something changes by time alone: a used slot comes within the lead time, a pause or a lease ends. */
  nextChangeAt(now: number): number | undefined {
    const times = this.s.held.map((g) => g.leaseUntil);
    if (this.s.waiting.length > 0) {
      if (this.s.pause.until > now) times.push(this.s.pause.until);
      else {
        const next = this.s.busyUntil.find((t) => t - this.lead() > now);
        if (next !== undefined) times.push(next - this.lead());
      }
    }
    return times.length ? Math.min(...times) : undefined;
  }

  /** No lead while probing an outage: the probe's answer decides whether more calls go out. */
  private lead(): number {
    return this.s.pause.probing ? 0 : (this.s.config.leadMs ?? 0);
  }

  get idle(): boolean {
    return this.s.waiting.length === 0 && this.s.held.length === 0 && this.s.followers.length === 0;
  }

  private expire(now: number): void {
    while (this.s.busyUntil.length > 0 && this.s.busyUntil[0]! <= now) this.s.busyUntil.shift();
    for (const g of this.s.held.filter((x) => x.leaseUntil <= now)) {
      // The holder may have called the provider just before vanishing: count the slot as used.
      this.s.held.splice(this.s.held.indexOf(g), 1);
      this.s.counts.expired++;
      this.markBusy(now);
      if (g.fingerprint !== undefined) this.promoteFollower(g.fingerprint);
    }
  }

  /**
   * Outages and 429s pause the whole family rather than every order backing off on its own:
   * during an outage one probe call at a time goes out, with growing pauses between them.
   */
  private learn(rel: SlotRelease, now: number): void {
    const p = this.s.pause;
    if (rel.outcome === 'answered') {
      p.unavailableInARow = 0;
      p.probing = false;
    } else if (rel.outcome === 'unavailable' || rel.outcome === 'unreachable') {
      p.unavailableInARow++;
      if (p.unavailableInARow >= OUTAGE_AFTER) {
        const cap = Math.min(PROBE_MAX_MS, this.s.config.windowMs / 4);
        const pauseMs = Math.min(cap, PROBE_BASE_MS * 2 ** (p.unavailableInARow - OUTAGE_AFTER));
        p.until = Math.max(p.until, now + pauseMs);
        p.probing = true;
        this.s.counts.paused++;
      }
    } else if (rel.outcome === 'rate_limited') {
      p.until = Math.max(p.until, now + (rel.retryAfterMs ?? PROBE_BASE_MS));
      this.s.counts.paused++;
    }
  }

  /** In order of first request, so a retried call keeps its place. */
  private enqueue(...reqs: SlotRequest[]): void {
    for (const req of reqs) {
      const at = this.s.waiting.findIndex((r) => r.requestedAt > req.requestedAt);
      this.s.waiting.splice(at < 0 ? this.s.waiting.length : at, 0, req);
    }
  }

  private markBusy(answeredAt: number): void {
    const until = answeredAt + this.s.config.windowMs + this.s.config.marginMs;
    const at = this.s.busyUntil.findIndex((t) => t > until);
    this.s.busyUntil.splice(at < 0 ? this.s.busyUntil.length : at, 0, until);
  }

  private settleFollowers(fingerprint: string, quote: Quote | undefined, now: number): SlotAnswer[] {
    if (!quote) {
      this.promoteFollower(fingerprint);
      return [];
    }
    this.remember(fingerprint, quote);
    const mine = this.s.followers.filter((r) => r.fingerprint === fingerprint);
    this.s.followers = this.s.followers.filter((r) => r.fingerprint !== fingerprint);
    const usable = Date.parse(quote.expires_at) - now >= this.s.config.quoteMinRemainingMs;
    if (!usable) {
      this.enqueue(...mine);
      return [];
    }
    this.s.counts.reused += mine.length;
    return mine.map((r) => ({ requestId: r.requestId, slot: false as const, quote }));
  }

  /** The request that was to get the quote failed: the next identical one asks itself. */
  private promoteFollower(fingerprint: string): void {
    const i = this.s.followers.findIndex((r) => r.fingerprint === fingerprint);
    if (i >= 0) this.enqueue(...this.s.followers.splice(i, 1));
  }

  private cachedQuote(fingerprint: string, now: number): Quote | undefined {
    this.s.quotes = this.s.quotes.filter((q) => Date.parse(q.quote.expires_at) - now >= this.s.config.quoteMinRemainingMs);
    return this.s.quotes.find((q) => q.fingerprint === fingerprint)?.quote;
  }

  private remember(fingerprint: string, quote: Quote): void {
    this.s.quotes = this.s.quotes.filter((q) => q.fingerprint !== fingerprint);
    this.s.quotes.push({ fingerprint, quote });
    if (this.s.quotes.length > QUOTE_CACHE_LIMIT) this.s.quotes.shift();
  }
}
