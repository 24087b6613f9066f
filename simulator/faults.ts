/**
 * Fault injection (POST /_sim/faults) and the seeded random source behind it, so a run with the
 * same SIMULATOR_SEED and the same calls injects the same faults.
 */
import { z } from 'zod';

const rate = z.number().min(0).max(1);

export const FaultsSchema = z
  .object({
    /** Fraction of /v1 calls answered 503 service_unavailable (not counted in rate windows). */
    error_rate: rate,
    /** Real milliseconds added before every /v1 answer (not scaled: it models the network). */
    latency_ms: z.number().int().min(0).max(120_000),
    /** Fraction of webhook events never sent at all. */
    webhook_drop_rate: rate,
    /** Fraction of webhook events sent twice (same event id). */
    webhook_duplicate_rate: rate,
    /** Fraction of webhook events held back and sent after the next one. */
    webhook_reorder_rate: rate,
    /** Treat every Idempotency-Key as absent (a provider that ignores the header). */
    ignore_idempotency_keys: z.boolean(),
    /** Creations of these reference numbers always answered with this status (a poison order). */
    reference_faults: z.record(z.string().max(200), z.union([z.literal(422), z.literal(500)])),
  })
  .strict();
export type Faults = z.infer<typeof FaultsSchema>;

/** POST /_sim/faults merges: fields left out keep their current value. */
export const FaultsPatchSchema = FaultsSchema.partial().strict();

export const DEFAULT_FAULTS: Faults = Object.freeze({
  error_rate: 0,
  latency_ms: 0,
  webhook_drop_rate: 0,
  webhook_duplicate_rate: 0,
  webhook_reorder_rate: 0,
  ignore_idempotency_keys: false,
  reference_faults: {},
});

/** mulberry32: tiny, fast, good enough for fault rolls; deterministic from a 32-bit seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A roll that never consumes randomness for a rate of 0, so enabling one fault does not shift others. */
export function roll(random: () => number, rate: number): boolean {
  if (rate <= 0) return false;
  if (rate >= 1) return true;
  return random() < rate;
}

/** Applies a validated partial update; fields left out (or undefined) keep their value. */
export function mergeFaults(current: Faults, patch: unknown): Faults {
  const parsed = FaultsPatchSchema.parse(patch);
  const defined = Object.fromEntries(Object.entries(parsed).filter(([, v]) => v !== undefined)) as Partial<Faults>;
  return { ...current, ...defined };
}
