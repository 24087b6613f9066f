/**
 * How the workers pace provider calls (workflows/gate.ts), from the environment:
 *
 *   PROVIDER_RATE_LIMITS       e.g. `creations=20/60s,quotes=100/10m` (families left out keep their
 *                              default; `other` is the limit for every other call)
 *   PROVIDER_PACING            `gate` (default): the pacing gate makes quotes and creations;
 *                              `task-queue`: Temporal's task-queue rate limit only (the comparison)
 *   PROVIDER_PACING_MARGIN_MS  added to every slot's reuse time (default 250)
 *   PROVIDER_PACING_LEAD_MS    a slot that frees within this long gets its call scheduled ahead (default 1000)
 *   PROVIDER_CALL_TIMEOUT_MS   how long one call may take from its start, lookup included (default 30000)
 *   PROVIDER_QUOTE_MIN_REMAINING_MS  a quote is shared or carried only while it has this long left (default 60000)
 *   PROVIDER_PACING_GATE_HISTORY_LIMIT  the gate continues as new at this many events, or sooner when
 *                              Temporal suggests it (default 5000)
 *   DELIVERY_STATUS_SEARCH     `every` (default): a delivery sets DeliveryStatus on every status change,
 *                              so open deliveries are found by status; `final`: once, when it ends
 *                              (contract/search-attributes.ts)
 * The last is not pacing: it rides in the same settings because a delivery reads them once, by one local activity.
 */
import { z } from 'zod';
import { PROVIDER_RATE_LIMITS, parseRateLimits, type RateLimit } from '../provider/limits';
import { parseEnv } from '../provider/validation';
import type { PacingSettings } from '../contract/gate-messages';
import { STATUS_SEARCH, type StatusSearch } from '../contract/search-attributes';

export type { PacingSettings };
export { parseRateLimits };

const DEFAULT_STATUS_SEARCH: StatusSearch = 'every';
export const DEFAULT_PACING: PacingSettings = { pacing: 'gate', limits: { ...PROVIDER_RATE_LIMITS }, marginMs: 250, callTimeoutMs: 30_000, quoteMinRemainingMs: 60_000, leadMs: 1_000, gateHistoryLimit: 5_000, statusSearch: DEFAULT_STATUS_SEARCH };

/**
 * Temporal's task-queue rate limit for a family: a token bucket that may hold one token of burst
 * on top of its rate, so (limit - 1) / window keeps every window at or under the limit.
 */
export function taskQueueRatePerSecond(limit: RateLimit): number {
  return Math.max(1, limit.limit - 1) / (limit.windowMs / 1000);
}

const ms = (min: number, max: number, fallback: number) => z.coerce.number().int().min(min).max(max).default(fallback);
const PacingEnvSchema = z.object({
  PROVIDER_RATE_LIMITS: z
    .string()
    .optional()
    .transform((text, ctx) => {
      try {
        return parseRateLimits(text ?? '');
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    }),
  PROVIDER_PACING: z.enum(['gate', 'task-queue'], { message: 'must be "gate" or "task-queue"' }).default(DEFAULT_PACING.pacing),
  PROVIDER_PACING_MARGIN_MS: ms(0, 60_000, DEFAULT_PACING.marginMs),
  PROVIDER_CALL_TIMEOUT_MS: ms(1_000, 600_000, DEFAULT_PACING.callTimeoutMs),
  PROVIDER_PACING_LEAD_MS: ms(0, 60_000, DEFAULT_PACING.leadMs),
  PROVIDER_QUOTE_MIN_REMAINING_MS: ms(0, 3_600_000, DEFAULT_PACING.quoteMinRemainingMs),
  PROVIDER_PACING_GATE_HISTORY_LIMIT: z.coerce.number().int().min(100).max(40_000).default(DEFAULT_PACING.gateHistoryLimit),
  DELIVERY_STATUS_SEARCH: z.enum(STATUS_SEARCH, { message: 'must be "final" or "every"' }).default(DEFAULT_STATUS_SEARCH),
});

export function pacingSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): PacingSettings {
  const e = parseEnv(PacingEnvSchema, env, 'pacing configuration');
  return {
    pacing: e.PROVIDER_PACING,
    limits: e.PROVIDER_RATE_LIMITS,
    marginMs: e.PROVIDER_PACING_MARGIN_MS,
    callTimeoutMs: e.PROVIDER_CALL_TIMEOUT_MS,
    quoteMinRemainingMs: e.PROVIDER_QUOTE_MIN_REMAINING_MS,
    leadMs: e.PROVIDER_PACING_LEAD_MS,
    gateHistoryLimit: e.PROVIDER_PACING_GATE_HISTORY_LIMIT,
    statusSearch: e.DELIVERY_STATUS_SEARCH,
  };
}
