/**
 * Time in the simulator. Two separate ideas:
 * - the clock (wall-clock milliseconds, injectable so tests can move time by hand), used for
 *   record timestamps, rate windows, idempotency expiry and quote expiry;
 * - the time scale, which makes *provider-time durations* (rate windows, Retry-After, quote
 *   validity, idempotency TTL, webhook retry delays, auto-advance pace) shorter by a factor, so
 *   a test can exercise a one-minute window in one second. Timestamps are never scaled.
 */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now();

export class TimeScale {
  constructor(readonly factor: number) {
    if (!Number.isFinite(factor) || factor <= 0) throw new RangeError(`time scale must be a positive number, got ${factor}`);
  }

  /** A provider-time duration, in real milliseconds at this scale. */
  real(providerMs: number): number {
    return providerMs / this.factor;
  }
}

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
