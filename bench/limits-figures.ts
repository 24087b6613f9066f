/** The arithmetic of `npm run bench -- limits`, pure and unit-tested (test/unit/limits-figures.test.ts). */
import type { RateLimit } from '../provider/limits';

/**
 * The least time from a backlog at 0 to its last creation, with zero latency: each fingerprint quoted in the earliest free quote
 * slot, each order created in the earliest free creation slot once quoted (greedy is optimal for identical jobs).
 */
export function leastDrainMs(orders: readonly { fingerprint: string }[], quotes: RateLimit, creations: RateLimit): number {
  return Math.max(0, ...leastCreationTimes(orders, quotes, creations));
}

/** When each order is created in that least-time schedule (ascending): the best possible drain curve. */
export function leastCreationTimes(orders: readonly { fingerprint: string }[], quotes: RateLimit, creations: RateLimit): number[] {
  const quoteSlots = new Array<number>(quotes.limit).fill(0);
  const quotedAt = new Map<string, number>();
  for (const o of orders) if (!quotedAt.has(o.fingerprint)) quotedAt.set(o.fingerprint, takeSlot(quoteSlots, 0, quotes.windowMs));
  const creationSlots = new Array<number>(creations.limit).fill(0);
  const ready = orders.map((o) => quotedAt.get(o.fingerprint)!).sort((a, b) => a - b);
  return ready.map((r) => takeSlot(creationSlots, r, creations.windowMs)).sort((a, b) => a - b);
}

/** The earliest free slot at or after `from`, taken: a slot used at t is free again at t + window. */
function takeSlot(slots: number[], from: number, windowMs: number): number {
  const i = slots.indexOf(Math.min(...slots));
  const at = Math.max(from, slots[i]!);
  slots[i] = at + windowMs;
  return at;
}

/** Calls per window ÷ the limit over the windows (end to end from the first call) that began with ≥ `limit` waiting; NaN for none. */
export function windowUse(callTimes: readonly number[], backlogAt: (t: number) => number, limit: RateLimit): { ratio: number; windows: number } {
  if (callTimes.length === 0) return { ratio: NaN, windows: 0 };
  const sorted = [...callTimes].sort((a, b) => a - b);
  let used = 0;
  let windows = 0;
  for (let start = sorted[0]!; start <= sorted[sorted.length - 1]!; start += limit.windowMs) {
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

export function round(x: number, digits = 3): number {
  return Number.isFinite(x) ? Number(x.toFixed(digits)) : x;
}
