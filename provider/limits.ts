/**
 * The provider's rate limits (contract § Errors and limits): per API key, over a rolling window.
 * One place for these numbers: the simulator enforces them, the worker sizes its task-queue
 * rate limits from them, and the docs quote them.
 */
export interface RateLimit {
  /** Calls allowed inside any window of `windowMs`. */
  readonly limit: number;
  readonly windowMs: number;
}

export type CallFamily = 'creations' | 'quotes' | 'other';

export const PROVIDER_RATE_LIMITS: Readonly<Record<CallFamily, RateLimit>> = {
  /** given: 20 creations per minute */
  creations: { limit: 20, windowMs: 60_000 },
  /** given: 100 quotes per 10 minutes */
  quotes: { limit: 100, windowMs: 600_000 },
  /** assumed: every other call, 600 per minute */
  other: { limit: 600, windowMs: 60_000 },
};

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };
const FAMILIES: readonly CallFamily[] = ['creations', 'quotes', 'other'];

/** `creations=20/60s,quotes=100/10m` → limits; throws naming the part that is wrong. */
export function parseRateLimits(text: string, defaults: Readonly<Record<CallFamily, RateLimit>> = PROVIDER_RATE_LIMITS): Record<CallFamily, RateLimit> {
  const limits = { ...defaults };
  for (const part of text.split(',').map((p) => p.trim()).filter(Boolean)) {
    const m = /^(\w+)\s*=\s*(\d+)\s*\/\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)$/.exec(part);
    if (!m) throw new Error(`"${part}" must look like creations=20/60s (family=calls/window, window in ms, s, m or h)`);
    const [, family, calls, amount, unit] = m as unknown as [string, string, string, string, string];
    if (!FAMILIES.includes(family as CallFamily)) throw new Error(`"${family}" is not a call family (one of ${FAMILIES.join(', ')})`);
    const limit = Number(calls);
    const windowMs = Number(amount) * UNITS[unit]!;
    if (limit < 1) throw new Error(`${family}: the number of calls must be at least 1`);
    if (windowMs < 1) throw new Error(`${family}: the window must be at least 1 ms`);
    limits[family as CallFamily] = { limit, windowMs };
  }
  return limits;
}

/** A quote stays valid this long (assumed). */
export const QUOTE_VALIDITY_MS = 15 * 60_000;
/** Idempotency keys are remembered this long (assumed). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60_000;
/** Webhook receivers reject timestamps further off than this (assumed, Standard Webhooks). */
export const WEBHOOK_TOLERANCE_MS = 5 * 60_000;
/** Delays before each webhook retry (assumed): first attempt, then six retries. */
export const WEBHOOK_RETRY_DELAYS_MS: readonly number[] = [5_000, 30_000, 120_000, 600_000, 1_800_000, 3_600_000];
