/**
 * Task-queue rate limits from the provider's rolling-window limits (the `task-queue` limiter, and
 * the other calls). The server enforces a task queue's activity rate for all workers together
 * (one partition, see the dev-server flags). Its limiter is a token bucket that may hold one
 * token of burst on top of the steady rate, so the steady rate is (limit - 1) / window: then no
 * window of `windowMs` ever sees more than `limit` starts. That leaves at most (limit - 1) / limit
 * of the budget usable, which is why creations and quotes use the window limiter by default
 * (docs/benchmarks.md has both measured).
 */
import type { RateLimit } from '../provider/limits';

export function taskQueueRatePerSecond(limit: RateLimit): number {
  const allowed = Math.max(1, limit.limit - 1);
  return allowed / (limit.windowMs / 1000);
}

