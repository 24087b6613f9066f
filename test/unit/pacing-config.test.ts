/** Pacing settings from the environment: defaults are the provider's limits; mistakes are named. */
import { PROVIDER_RATE_LIMITS } from '../../provider/limits';
import { pacingSettingsFromEnv, parseRateLimits, taskQueueRatePerSecond } from '../../worker/pacing-config';

describe('pacing configuration', () => {
  it("defaults to the provider's limits and the gate", () => {
    const s = pacingSettingsFromEnv({});
    expect(s.pacing).toBe('gate');
    expect(s.limits).toEqual(PROVIDER_RATE_LIMITS);
    expect(s.limits.creations).toEqual({ limit: 20, windowMs: 60_000 });
    expect(s.limits.quotes).toEqual({ limit: 100, windowMs: 600_000 });
  });

  it('reads limits per family in any unit, keeping the defaults of families left out', () => {
    const limits = parseRateLimits('creations=20/6s, quotes=100/1m,other=5/250ms');
    expect(limits).toEqual({ creations: { limit: 20, windowMs: 6_000 }, quotes: { limit: 100, windowMs: 60_000 }, other: { limit: 5, windowMs: 250 } });
    expect(parseRateLimits('quotes=10/1h').creations).toEqual(PROVIDER_RATE_LIMITS.creations);
  });

  it('names the variable and the part that is wrong', () => {
    expect(() => pacingSettingsFromEnv({ PROVIDER_RATE_LIMITS: 'creations=20 per minute' })).toThrow(
      /invalid pacing configuration: PROVIDER_RATE_LIMITS: "creations=20 per minute" must look like creations=20\/60s/,
    );
    expect(() => pacingSettingsFromEnv({ PROVIDER_RATE_LIMITS: 'deliveries=20/60s' })).toThrow(/PROVIDER_RATE_LIMITS: "deliveries" is not a call family/);
    expect(() => pacingSettingsFromEnv({ PROVIDER_RATE_LIMITS: 'creations=0/60s' })).toThrow(/creations: the number of calls must be at least 1/);
    expect(() => pacingSettingsFromEnv({ PROVIDER_PACING: 'redis' })).toThrow(/PROVIDER_PACING: must be "gate" or "task-queue"/);
    expect(() => pacingSettingsFromEnv({ PROVIDER_CALL_TIMEOUT_MS: '5' })).toThrow(/PROVIDER_CALL_TIMEOUT_MS/);
  });

  it("sizes Temporal's task-queue rate so a token bucket with one token of burst never exceeds a window", () => {
    const perSecond = taskQueueRatePerSecond({ limit: 20, windowMs: 60_000 });
    // One token of burst plus a full window at the steady rate: exactly the limit.
    expect(1 + perSecond * 60).toBeCloseTo(20, 9);
  });
});
