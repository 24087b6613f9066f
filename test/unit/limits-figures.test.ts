/** The benchmark's arithmetic: least drain time under both limits, window use, medians. */
import { backlogCounter, leastDrainMs, windowUse } from '../../bench/limits-figures';
import { median, percentile } from '../../bench/measure';

const creations = { limit: 20, windowMs: 60_000 };
const quotes = { limit: 100, windowMs: 600_000 };
const orders = (n: number, distinct = n) => Array.from({ length: n }, (_, i) => ({ fingerprint: `f${i % distinct}` }));

describe('leastDrainMs', () => {
  it('is bound by creations when quotes are plenty: 300 orders need 15 windows, the last starting after 14', () => {
    expect(leastDrainMs(orders(300), { limit: 1_000, windowMs: 600_000 }, creations)).toBe(14 * 60_000);
  });

  it('waits for quote windows when quotes bind: 300 distinct orders, 100 quotes per 10 minutes', () => {
    // Quoted at 0, 10 and 20 minutes; each hundred then takes five creation windows (0..4 minutes after).
    expect(leastDrainMs(orders(300), quotes, creations)).toBe(20 * 60_000 + 4 * 60_000);
  });

  it('counts one quote for identical orders', () => {
    // 200 orders, 100 distinct: one quote window, then 10 creation windows.
    expect(leastDrainMs(orders(200, 100), quotes, creations)).toBe(9 * 60_000);
  });
});

describe('windowUse', () => {
  it('is 1 when every window with a full backlog used its whole limit, and ignores windows without one', () => {
    const calls = [...Array.from({ length: 20 }, (_, i) => i), ...Array.from({ length: 20 }, (_, i) => 60_000 + i), 120_000];
    const backlog = backlogCounter([...Array.from({ length: 40 }, () => ({ from: 0, to: 60_100 })), { from: 0, to: 120_001 }]);
    const use = windowUse(calls, backlog, creations);
    expect(use).toEqual({ ratio: 1, windows: 2 }); // the third window had 1 waiting: not counted
  });

  it('shows a window half used while the backlog was full', () => {
    const calls = Array.from({ length: 10 }, (_, i) => i);
    expect(windowUse(calls, () => 50, creations)).toEqual({ ratio: 0.5, windows: 1 });
  });
});

describe('median', () => {
  it('of odd and even counts', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });
});

describe('percentile (nearest rank)', () => {
  const hundred = Array.from({ length: 100 }, (_, i) => i + 1);
  it('is the smallest value with at least p × n values at or below it', () => {
    expect(percentile(hundred, 0.5)).toBe(50);
    expect(percentile(hundred, 0.99)).toBe(99); // not the maximum
    expect(percentile(hundred, 1)).toBe(100);
    expect(percentile([7], 0.99)).toBe(7);
    expect(percentile([1, 2, 3], 0.5)).toBe(2);
  });
  it('refuses a percent where a fraction is meant, and has no value for no samples', () => {
    expect(() => percentile(hundred, 99)).toThrow(/fraction/);
    expect(percentile([], 0.5)).toBeNaN();
  });
});
