import type { AccountRegistry } from '../../accounts/registry';
import { PROVIDER_RATE_LIMITS, type CallFamily, type RateLimit } from '../../provider/limits';
import { DISPATCH_SPREAD_MS, fairnessKeyRate, queueRates, SERVER_KEY_BURST_MS, SERVER_MIN_WEIGHT } from '../../worker/account-rates';

/** A registry of accounts with these `other` limits (the other families the contract's). */
function registry(others: Record<string, RateLimit>): AccountRegistry {
  const limits = (id: string): Record<CallFamily, RateLimit> => ({ ...PROVIDER_RATE_LIMITS, other: others[id]! });
  return { ids: () => Object.keys(others), get: (id: string) => (others[id] ? { id, limits: limits(id) } : undefined) } as unknown as AccountRegistry;
}

const MARGIN_MS = 250;
const rateOf = (rates: ReturnType<typeof queueRates>, id: string) => rates.defaultRate * (rates.weights[id] ?? 1);

describe('fairnessKeyRate', () => {
  it.each([
    [{ limit: 600, windowMs: 60_000 }],
    [{ limit: 5, windowMs: 5_000 }],
    [{ limit: 1, windowMs: 1_000 }],
    [{ limit: 20, windowMs: 60_000 }],
  ])('keeps the server limiter (one burst, then one call per interval) within %j in any window', (limit) => {
    // The server's limiter lets through floor((span + burst) / interval) + 1 calls in a span; the
    // courier's window of arrivals spans dispatches up to windowMs + the dispatch spread apart.
    const intervalMs = 1_000 / fairnessKeyRate(limit, MARGIN_MS);
    expect(Math.floor((limit.windowMs + DISPATCH_SPREAD_MS + SERVER_KEY_BURST_MS) / intervalMs) + 1).toBeLessThanOrEqual(limit.limit);
  });
});

describe('queueRates', () => {
  it("gives no weight to accounts at PROVIDER_RATE_LIMITS's limit and each other account a weight that makes its own rate", () => {
    const rates = queueRates('other', PROVIDER_RATE_LIMITS, registry({ same: PROVIDER_RATE_LIMITS.other, small: { limit: 60, windowMs: 60_000 }, big: { limit: 3_000, windowMs: 60_000 } }), MARGIN_MS);
    expect(rates.defaultRate).toBe(fairnessKeyRate(PROVIDER_RATE_LIMITS.other, MARGIN_MS));
    expect(Object.keys(rates.weights).sort()).toEqual(['big', 'small']);
    expect(rateOf(rates, 'small')).toBeCloseTo(fairnessKeyRate({ limit: 60, windowMs: 60_000 }, MARGIN_MS), 9);
    expect(rateOf(rates, 'big')).toBeCloseTo(fairnessKeyRate({ limit: 3_000, windowMs: 60_000 }, MARGIN_MS), 9);
  });

  it("lowers the default for an account slower than the server's smallest weight allows, so no weight is raised by the server", () => {
    const slow = { limit: 1, windowMs: 3_600_000 };
    const rates = queueRates('other', PROVIDER_RATE_LIMITS, registry({ slow, same: PROVIDER_RATE_LIMITS.other }), MARGIN_MS);
    expect(Math.min(...Object.values(rates.weights))).toBeGreaterThanOrEqual(SERVER_MIN_WEIGHT);
    expect(rateOf(rates, 'slow')).toBeCloseTo(fairnessKeyRate(slow, MARGIN_MS), 12);
    expect(rateOf(rates, 'same')).toBeCloseTo(fairnessKeyRate(PROVIDER_RATE_LIMITS.other, MARGIN_MS), 9);
  });

  it('without a registry, the one rate of PROVIDER_RATE_LIMITS for every key', () => {
    expect(queueRates('quotes', PROVIDER_RATE_LIMITS, undefined, MARGIN_MS)).toEqual({ defaultRate: fairnessKeyRate(PROVIDER_RATE_LIMITS.quotes, MARGIN_MS), weights: {} });
  });
});
