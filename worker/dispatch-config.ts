/**
 * How the workers pace provider calls, from the environment (defaults: the provider's limits).
 *
 *   PROVIDER_RATE_LIMITS     e.g. `creations=20/60s,quotes=100/10m` (families left out keep their
 *                            default; `other` is the limit for every other call)
 *   PROVIDER_LIMITER         `window` (default): window-exact slots held by a limiter workflow
 *                            per call family; `task-queue`: Temporal's task-queue rate limit only
 *   PROVIDER_LIMIT_MARGIN_MS added to every slot's reuse time for clock skew (default 250)
 *   PROVIDER_CALL_TIMEOUT_MS start-to-close of one provider call, lookups included (default 30000)
 *   PROVIDER_SLOT_LEAD_MS    a slot that frees within this long is granted ahead, the call waiting
 *                            in its activity until the slot's time (default 1000)
 *   PROVIDER_QUOTE_MIN_REMAINING_MS  a quote is reused for identical inputs only while it has at
 *                            least this long left (default 60000)
 *
 * docs/operations.md explains the choice between the two limiters and how to set them up.
 */
import { z } from 'zod';
import { PROVIDER_RATE_LIMITS, type CallFamily, type RateLimit } from '../provider/limits';
import { parseEnv } from '../provider/validation';

export type LimiterMode = 'window' | 'task-queue';

export interface DispatchSettings {
  limiter: LimiterMode;
  limits: Record<CallFamily, RateLimit>;
  /** Extra wait before a slot is used again, for clock skew between workers and server. */
  marginMs: number;
  /** Start-to-close timeout of one provider call activity. */
  callTimeoutMs: number;
  quoteMinRemainingMs: number;
  leadMs: number;
}

export const DEFAULT_DISPATCH: DispatchSettings = {
  limiter: 'window',
  limits: { ...PROVIDER_RATE_LIMITS },
  marginMs: 250,
  callTimeoutMs: 30_000,
  quoteMinRemainingMs: 60_000,
  leadMs: 1_000,
};

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };
const FAMILIES: readonly CallFamily[] = ['creations', 'quotes', 'other'];

/** `creations=20/60s,quotes=100/10m` → limits; throws naming the part that is wrong. */
export function parseRateLimits(text: string, defaults: Record<CallFamily, RateLimit> = PROVIDER_RATE_LIMITS): Record<CallFamily, RateLimit> {
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

const DispatchEnvSchema = z.object({
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
  PROVIDER_LIMITER: z.enum(['window', 'task-queue'], { message: 'must be "window" or "task-queue"' }).default(DEFAULT_DISPATCH.limiter),
  PROVIDER_LIMIT_MARGIN_MS: z.coerce.number().int().min(0).max(60_000).default(DEFAULT_DISPATCH.marginMs),
  PROVIDER_CALL_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(600_000).default(DEFAULT_DISPATCH.callTimeoutMs),
  PROVIDER_SLOT_LEAD_MS: z.coerce.number().int().min(0).max(60_000).default(DEFAULT_DISPATCH.leadMs),
  PROVIDER_QUOTE_MIN_REMAINING_MS: z.coerce.number().int().min(0).max(3_600_000).default(DEFAULT_DISPATCH.quoteMinRemainingMs),
});

export function dispatchSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): DispatchSettings {
  const e = parseEnv(DispatchEnvSchema, env, 'dispatch configuration');
  return {
    limiter: e.PROVIDER_LIMITER, limits: e.PROVIDER_RATE_LIMITS, marginMs: e.PROVIDER_LIMIT_MARGIN_MS, callTimeoutMs: e.PROVIDER_CALL_TIMEOUT_MS,
    quoteMinRemainingMs: e.PROVIDER_QUOTE_MIN_REMAINING_MS,
    leadMs: e.PROVIDER_SLOT_LEAD_MS,
  };
}
