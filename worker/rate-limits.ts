/**
 * Task-queue rate limits from the provider's rolling-window limits. The server enforces a task
 * queue's activity rate for all workers together (one partition, see the dev-server flags).
 * Its limiter is a token bucket that may hold one token of burst on top of the steady rate, so
 * the steady rate is (limit - 1) / window: then no window of `windowMs` ever sees more than
 * `limit` starts. The rate-limit issue measures and tunes this.
 */
import type { CallFamily, RateLimit } from '../provider/limits';

export function taskQueueRatePerSecond(limit: RateLimit): number {
  const allowed = Math.max(1, limit.limit - 1);
  return allowed / (limit.windowMs / 1000);
}

export type RateLimits = Record<CallFamily, RateLimit>;
