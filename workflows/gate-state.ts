/** The gate's bookkeeping, pure and deterministic: the gate workflow drives it, unit tests drive it with plain numbers. */
import { withinMaxPrice } from '../provider/money';
import type { Quote } from '../provider/schemas';
import { GATED_FAMILIES, type GateAnswer, type GateConfig, type GatedFamily, type GateRequest } from '../contract/gate-messages';

/**
 * `retryAt`: a failed order waits out its own backoff, not holding back the others; `unclear`: an
 * earlier attempt may have reached the provider; `quote`: a creation that follows its quote
 * (`create`), `quoteShared` when that quote was an identical order's.
 */
export type Waiting = GateRequest & { retryAt: number; attempts: number; unclear: boolean; quote?: Quote; quoteShared?: true };
/** `notBefore`: the slot's time, when the call may go out; `withdrawn`: its order was cancelled while it was out. */
export type Call = { req: Waiting; notBefore: number; withdrawn?: boolean };
export type Addressed = { to: string; answer: GateAnswer };

/** How a call ended, for pacing: which calls hold their slot for a window, and whose fault a failure was. */
export type Outcome =
  | { kind: 'answered'; quote?: Quote; answer: GateAnswer; afterCallMs?: number } // any answer from the provider but a 429 or a 5xx; `afterCallMs`: the activity ran on this long after it
  | { kind: 'rate_limited'; retryAfterMs: number } // not counted by the provider
  | { kind: 'unauthorized' } // a 401: the account's key is revoked or wrong; its calls pause, probing
  | { kind: 'not_made' } // certainly never sent (the slot was missed)
  | { kind: 'unavailable' | 'unreachable' | 'unclear' }; // a 5xx, no answer, or a worker that died mid-call

/** What the gate carries across continue-as-new: no waiting requests, no orders, no personal data. */
export interface GateSnapshot {
  config: GateConfig;
  busyUntil: Record<GatedFamily, number[]>; // per family, when each used slot may be used again (ascending)
  pausedUntil: Record<GatedFamily, number>;
  outage: { failing: string[]; probes: number; until: number }; // `failing`: different orders that failed a first time since the last answer
  quotes: { fingerprint: string; quote: Quote }[];
  counts: { calls: number; shared: number; retried: number };
  answered: string[]; // the latest requests answered: a request sent again (its local activity retried) is not made again
  /** Since when the courier refuses the account's key (a 401): every call waits, one probe per UNAUTHORIZED_PROBE_MS, until one is answered. Absent in gates before it. */
  unauthorizedSince?: number;
}

/**
 * While the courier refuses the account's key, one call (a real one, of the first order waiting)
 * goes out this often: a corrected key (read from the registry at each call) is noticed within
 * this long, and a revoked one costs one refused call per period, never a storm. The gate holds
 * its queue so; the pause itself, its log line and count, is the worker process's, kept by the
 * gate's calls and the others alike (activities/account-pauses.ts).
 */
export const UNAUTHORIZED_PROBE_MS = 5_000;

/** This many different orders failing in a row, with no answer between, mean an outage. */
export const OUTAGE_AFTER = 3;
const BACKOFF_BASE_MS = 1_000;
const BACKOFF_MAX_MS = 10 * 60_000;
const QUOTE_CACHE_LIMIT = 2_000;
const ANSWERED_LIMIT = 2_000;

const key = (r: { from: string; n: number }) => `${r.from}#${r.n}`;
const addressed = (to: string, answer: GateAnswer | undefined): Addressed[] => (answer ? [{ to, answer }] : []);
/** How long before `now` the call certainly ended: the tell after a creation (a second at most, as createInGate bounds it). */
const afterCall = (o: Outcome) => (o.kind === 'answered' ? Math.min(1_000, Math.max(0, o.afterCallMs ?? 0)) : 0);

export class GateState {
  waiting: Waiting[] = [];
  readonly inFlight = new Map<string, Call>();

  /** `onAnswerOnce`: called where a quote's answer is left out for `answerOnce` (the gate workflow marks a patch of 0.3.0 there). */
  constructor(
    readonly s: GateSnapshot,
    private readonly onAnswerOnce: () => void = () => undefined,
  ) {}

  static empty(config: GateConfig): GateState {
    return new GateState({ config, busyUntil: { creations: [], quotes: [] }, pausedUntil: { creations: 0, quotes: 0 }, outage: { failing: [], probes: 0, until: 0 }, quotes: [], counts: { calls: 0, shared: 0, retried: 0 }, answered: [] });
  }

  /**
   * Queues a request (food first, then by first request), or answers it from a valid shared quote.
   * Settings and limits it carries are its worker's, the limits as its registry says: they apply
   * from now on, to the windows already held too (a lowered limit waits until enough of them pass).
   */
  request(r: GateRequest, now: number): GateAnswer | undefined {
    if (r.config) this.s.config = r.config;
    else if (r.limits) this.s.config = { ...this.s.config, limits: r.limits };
    if (this.inFlight.has(key(r)) || this.waiting.some((w) => key(w) === key(r)) || this.s.answered.includes(key(r))) return undefined; // sent again
    const quote = r.fingerprint === undefined ? undefined : this.sharedQuote(r.fingerprint, now);
    const waiting: Waiting = { ...r, retryAt: 0, attempts: 0, unclear: r.unclear ?? false };
    if (quote) {
      this.s.counts.shared++;
      return this.quoteAnswer(waiting, quote, true, now);
    }
    this.enqueue(waiting);
    return undefined;
  }

  /** Remembers that a request got its answer. */
  answer(to: string, a: GateAnswer): void {
    if (!('again' in a)) this.s.answered = [...this.s.answered, key({ from: to, n: a.n })].slice(-ANSWERED_LIMIT);
  }

  /** A waiting request leaves (its workflow was cancelled); one whose call is out gets that call's answer instead. */
  withdraw(r: { from: string; n: number }): GateAnswer | undefined {
    const call = this.inFlight.get(key(r));
    if (call) return void (call.withdrawn = true);
    this.waiting = this.waiting.filter((w) => key(w) !== key(r));
    return { n: r.n, withdrawn: true };
  }

  /**
   * A quote's answer to the order that asked. Asked with `create` and within its maximum price,
   * the creation is queued at the order's place, and the answer says `creating`; asked with
   * `answerOnce`, there is no answer yet when the creation can go out at once: the delivery's
   * answer carries the quote.
   */
  private quoteAnswer(r: Waiting, quote: Quote, shared: boolean, now: number): GateAnswer | undefined {
    const max = r.create?.maxPrice;
    if (!r.create || (max && !withinMaxPrice(quote.price, max))) return { n: r.n, quote, shared };
    this.enqueue({ ...r, family: 'creations', fingerprint: undefined, create: undefined, quote, ...(shared && { quoteShared: true }), retryAt: 0, attempts: 0, unclear: false });
    if (r.create.answerOnce && this.freeForAllWaiting('creations', now)) return void this.onAnswerOnce();
    return { n: r.n, quote, shared, creating: true };
  }

  /** Whether every request of the family waiting now gets a slot now (its order then hears nothing while it waits). */
  private freeForAllWaiting(family: GatedFamily, now: number): boolean {
    if (now < this.s.pausedUntil[family] || this.s.outage.failing.length >= OUTAGE_AFTER) return false;
    return this.freeAt(family, now) >= this.waiting.filter((w) => w.family === family).length;
  }

  /** The calls to make now: every slot free now or within the lead time goes to the first eligible request. */
  take(now: number): Call[] {
    const out: Call[] = [];
    const probing = this.s.outage.failing.length >= OUTAGE_AFTER || this.s.unauthorizedSince !== undefined;
    if (probing && (now < this.s.outage.until || this.inFlight.size > 0)) return out;
    for (const family of GATED_FAMILIES) {
      const busy = this.s.busyUntil[family];
      while (busy.length > 0 && busy[0]! <= now) busy.shift();
      if (now < this.s.pausedUntil[family]) continue;
      for (;;) {
        const free = this.s.config.limits[family].limit - this.held(family) - busy.length;
        // With no slot free, the next comes when 1 - free held windows have passed: one, or more
        // after a lowered limit (three held, the limit now one: when the third passes).
        const at = free > 0 ? now : busy[-free];
        if (at === undefined || at > now + (free > 0 || probing ? 0 : this.s.config.leadMs)) break;
        const req = this.waiting.find((w) => w.family === family && w.retryAt <= at && !this.quoteInFlight(w));
        if (!req) break;
        if (free <= 0) busy.splice(0, 1 - free);
        this.waiting.splice(this.waiting.indexOf(req), 1);
        const call = { req, notBefore: at };
        this.inFlight.set(key(req), call);
        this.s.counts.calls++;
        out.push(call);
        if (probing) return out; // one probe at a time
      }
    }
    return out;
  }

  /** A call ended: counts its slot, learns from the outcome, and says who gets which answer. */
  done(call: Call, outcome: Outcome, now: number): Addressed[] {
    const { req } = call;
    const family = req.family;
    this.inFlight.delete(key(req));
    const w = this.s.config.limits[family].windowMs;
    // Every call that may have reached the provider holds its slot for a window from when it certainly ended;
    // a 429 is not counted, nor a 401: the courier counts per key, and a refused key is none of its keys
    // (so a probe goes every UNAUTHORIZED_PROBE_MS, whatever the account's limit).
    if (outcome.kind === 'rate_limited' || outcome.kind === 'not_made' || outcome.kind === 'unauthorized') {
      if (call.notBefore > now) this.markBusy(family, call.notBefore); // the slot it took was not free yet
    } else this.markBusy(family, now - afterCall(outcome) + w + this.s.config.marginMs);

    const o = this.s.outage;
    const again = (r: Waiting): Addressed[] => (call.withdrawn ? [{ to: r.from, answer: { n: r.n, withdrawn: true } }] : (this.enqueue(r), []));
    switch (outcome.kind) {
      case 'answered': {
        o.failing = [];
        o.probes = 0;
        delete this.s.unauthorizedSince; // the key is accepted (again)
        const quote = outcome.quote;
        // A withdrawn order hears of its quote, and is never created.
        const answer = quote && !call.withdrawn ? this.quoteAnswer(req, quote, false, now) : outcome.answer;
        const mine: Addressed[] = answer ? [{ to: req.from, answer }] : [];
        if (!quote || req.fingerprint === undefined) return mine;
        // Identical orders waiting for this quote get it too.
        this.s.quotes = [...this.s.quotes.filter((q) => q.fingerprint !== req.fingerprint), { fingerprint: req.fingerprint, quote }].slice(-QUOTE_CACHE_LIMIT);
        if (!this.sharedQuote(req.fingerprint, now)) return mine;
        const twins = this.waiting.filter((x) => x.fingerprint === req.fingerprint);
        this.waiting = this.waiting.filter((x) => x.fingerprint !== req.fingerprint);
        this.s.counts.shared += twins.length;
        return [...mine, ...twins.flatMap((t) => addressed(t.from, this.quoteAnswer(t, quote, true, now)))];
      }
      case 'rate_limited':
        this.s.pausedUntil[family] = Math.max(this.s.pausedUntil[family], now + outcome.retryAfterMs);
        return again(req);
      case 'unauthorized':
        // The key is the account's, for every family: all of them wait; the order keeps its place.
        this.s.unauthorizedSince ??= now;
        for (const f of GATED_FAMILIES) this.s.pausedUntil[f] = Math.max(this.s.pausedUntil[f], now + UNAUTHORIZED_PROBE_MS);
        return again(req);
      case 'not_made':
        return again(req);
      default:
        // Outage evidence: an order's first failure only (one that failed before may be poison, failing alone).
        if (outcome.kind !== 'unclear' && req.attempts === 0 && !o.failing.includes(req.from)) o.failing.push(req.from);
        // Probes back off up to a quarter of the shortest window: an outage's end is noticed that soon.
        if (o.failing.length >= OUTAGE_AFTER) o.until = now + Math.min(...GATED_FAMILIES.map((f) => this.s.config.limits[f].windowMs / 4), BACKOFF_BASE_MS * 2 ** o.probes++);
        this.s.counts.retried++; // this order alone waits out a growing backoff, its place kept
        return again({ ...req, attempts: req.attempts + 1, unclear: true, retryAt: now + Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** req.attempts) });
    }
  }

  /** When something changes by time alone, if anything waits for it. */
  nextChangeAt(now: number): number | undefined {
    const times: number[] = [this.s.outage.until, ...this.waiting.map((r) => r.retryAt)];
    for (const f of GATED_FAMILIES) {
      if (!this.waiting.some((r) => r.family === f)) continue;
      times.push(this.s.pausedUntil[f], ...this.s.busyUntil[f].map((t) => t - this.s.config.leadMs), ...this.s.busyUntil[f]);
    }
    const future = times.filter((t) => t > now);
    return future.length > 0 ? Math.min(...future) : undefined;
  }

  /** For the status query: reads, never changes. */
  status(now: number) {
    const per = (fn: (f: GatedFamily) => number) => ({ creations: fn('creations'), quotes: fn('quotes') });
    const { config, pausedUntil, outage, counts } = this.s;
    const free = per((f) => this.freeAt(f, now));
    const waitingOf = (f: GatedFamily) => this.waiting.filter((w) => w.family === f);
    return {
      config,
      waiting: this.waiting.length,
      inFlight: this.inFlight.size,
      free,
      pausedForMs: per((f) => Math.max(0, pausedUntil[f] - now)),
      outage: outage.failing.length >= OUTAGE_AFTER,
      counts,
      waitingByFamily: per((f) => waitingOf(f).length),
      oldestWaitMs: per((f) => Math.max(0, ...waitingOf(f).map((w) => now - w.requestedAt))),
    };
  }

  /** Slots of the family free at `now`: its limit less the calls out and the slots still held for a window. */
  private freeAt = (f: GatedFamily, now: number) => this.s.config.limits[f].limit - this.held(f) - this.s.busyUntil[f].filter((t) => t > now).length;
  private held = (f: GatedFamily) => [...this.inFlight.values()].filter((c) => c.req.family === f).length;
  private quoteInFlight = (r: Waiting) => r.fingerprint !== undefined && [...this.inFlight.values()].some((c) => c.req.fingerprint === r.fingerprint);

  /** Food first, then by first request. */
  private enqueue(r: Waiting): void {
    const at = this.waiting.findIndex((w) => (r.food !== w.food ? r.food : r.requestedAt < w.requestedAt));
    this.waiting.splice(at < 0 ? this.waiting.length : at, 0, r);
  }

  private markBusy(family: GatedFamily, until: number): void {
    const busy = this.s.busyUntil[family];
    const at = busy.findIndex((t) => t > until);
    busy.splice(at < 0 ? busy.length : at, 0, until);
  }

  private sharedQuote(fingerprint: string, now: number): Quote | undefined {
    this.s.quotes = this.s.quotes.filter((q) => Date.parse(q.quote.expires_at) - now >= this.s.config.quoteMinRemainingMs);
    return this.s.quotes.find((q) => q.fingerprint === fingerprint)?.quote;
  }
}
