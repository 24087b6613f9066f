/**
 * The arithmetic behind `npm run bench -- limits`, kept pure so it is unit-tested
 * (test/unit/limits-figures.test.ts): the least time the limits allow, how much of each window's
 * budget was used while a backlog waited, and medians.
 */
import type { RateLimit } from '../provider/limits';

export interface PlannedOrder {
  /** Orders with the same fingerprint need one quote between them. */
  fingerprint: string;
}

/**
 * The least time, from a backlog that starts at 0, until the last creation, with zero latency:
 * each distinct order is quoted in the earliest free quote slot, and each order created in the
 * earliest free creation slot once quoted. Under a strict rolling window a slot used at t is free
 * again at t + window; greedy earliest-slot assignment is optimal for identical jobs.
 */
export function leastDrainMs(orders: readonly PlannedOrder[], quotes: RateLimit, creations: RateLimit): number {
  return Math.max(0, ...leastCreationTimes(orders, quotes, creations));
}

/** When each order is created in that least-time schedule (ascending): the best possible drain curve. */
export function leastCreationTimes(orders: readonly PlannedOrder[], quotes: RateLimit, creations: RateLimit): number[] {
  const quoteSlots = new Array<number>(quotes.limit).fill(0);
  const quotedAt = new Map<string, number>();
  for (const o of orders) {
    if (quotedAt.has(o.fingerprint)) continue;
    const i = argMin(quoteSlots);
    quotedAt.set(o.fingerprint, quoteSlots[i]!);
    quoteSlots[i]! += quotes.windowMs;
  }
  const ready = orders.map((o) => quotedAt.get(o.fingerprint)!).sort((a, b) => a - b);
  const creationSlots = new Array<number>(creations.limit).fill(0);
  const created: number[] = [];
  for (const r of ready) {
    const i = argMin(creationSlots);
    const at = Math.max(r, creationSlots[i]!);
    creationSlots[i] = at + creations.windowMs;
    created.push(at);
  }
  return created.sort((a, b) => a - b);
}

function argMin(xs: number[]): number {
  let best = 0;
  for (let i = 1; i < xs.length; i++) if (xs[i]! < xs[best]!) best = i;
  return best;
}

/**
 * Calls per window ÷ the limit, over the windows in which the backlog could have filled the
 * window (at least `limit` waiting at its start). Windows are laid end to end from the first
 * call. Returns NaN when no window qualified.
 */
export function windowUse(callTimes: readonly number[], backlogAt: (t: number) => number, limit: RateLimit): { ratio: number; windows: number } {
  if (callTimes.length === 0) return { ratio: NaN, windows: 0 };
  const sorted = [...callTimes].sort((a, b) => a - b);
  const t0 = sorted[0]!;
  let used = 0;
  let windows = 0;
  for (let start = t0; start <= sorted[sorted.length - 1]!; start += limit.windowMs) {
    if (backlogAt(start) < limit.limit) continue;
    windows++;
    used += sorted.filter((t) => t >= start && t < start + limit.windowMs).length;
  }
  return { ratio: windows ? used / (windows * limit.limit) : NaN, windows };
}

/** How many orders wait at time t: those that began waiting at or before t and were served after. */
export function backlogCounter(spans: readonly { from: number; to: number }[]): (t: number) => number {
  return (t) => spans.filter((s) => s.from <= t && s.to > t).length;
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export function round(x: number, digits = 3): number {
  return Number.isFinite(x) ? Number(x.toFixed(digits)) : x;
}
