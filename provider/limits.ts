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

/** A quote stays valid this long (assumed). */
export const QUOTE_VALIDITY_MS = 15 * 60_000;
/** Idempotency keys are remembered this long (assumed). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60_000;
/** Webhook receivers reject timestamps further off than this (assumed, Standard Webhooks). */
export const WEBHOOK_TOLERANCE_MS = 5 * 60_000;
/** Delays before each webhook retry (assumed): first attempt, then six retries. */
export const WEBHOOK_RETRY_DELAYS_MS: readonly number[] = [5_000, 30_000, 120_000, 600_000, 1_800_000, 3_600_000];
