/** The rolling-window limiter, exactly, with an injected clock. */
import { PROVIDER_RATE_LIMITS } from '../../provider/limits';
import { retryAfterHeaders, RollingWindowLimiter } from '../../simulator/rate-limiter';

function limiter(limits = PROVIDER_RATE_LIMITS) {
  const clock = { t: 1_000_000 };
  return { clock, l: new RollingWindowLimiter(limits, () => clock.t) };
}

test('allows exactly `limit` calls in any window, refuses the next with the time until the oldest leaves', () => {
  const { clock, l } = limiter();
  for (let i = 0; i < 20; i++) {
    clock.t = 1_000_000 + i * 1_000;
    expect(l.tryAcquire('k', 'creations')).toEqual({ allowed: true });
  }
  clock.t = 1_000_000 + 30_500;
  expect(l.tryAcquire('k', 'creations')).toEqual({ allowed: false, retryAfterMs: 29_500 });
  clock.t = 1_000_000 + 59_999;
  expect(l.tryAcquire('k', 'creations')).toEqual({ allowed: false, retryAfterMs: 1 });
  // At exactly oldest + window the oldest has left.
  clock.t = 1_000_000 + 60_000;
  expect(l.tryAcquire('k', 'creations')).toEqual({ allowed: true });
  expect(l.tryAcquire('k', 'creations')).toEqual({ allowed: false, retryAfterMs: 1_000 });
});

test('refused calls take no slot (rolling, not fixed, window)', () => {
  const { clock, l } = limiter({ ...PROVIDER_RATE_LIMITS, creations: { limit: 2, windowMs: 1_000 } });
  const t0 = clock.t;
  expect(l.tryAcquire('k', 'creations').allowed).toBe(true);
  clock.t = t0 + 900;
  expect(l.tryAcquire('k', 'creations').allowed).toBe(true);
  for (let i = 0; i < 50; i++) expect(l.tryAcquire('k', 'creations').allowed).toBe(false);
  clock.t = t0 + 1_000;
  expect(l.tryAcquire('k', 'creations').allowed).toBe(true);
  expect(l.tryAcquire('k', 'creations')).toEqual({ allowed: false, retryAfterMs: 900 });
  clock.t = t0 + 1_900;
  expect(l.tryAcquire('k', 'creations').allowed).toBe(true);
});

test('keys and families are counted apart; reset clears', () => {
  const { l } = limiter({ ...PROVIDER_RATE_LIMITS, creations: { limit: 1, windowMs: 1_000 }, quotes: { limit: 1, windowMs: 1_000 } });
  expect(l.tryAcquire('a', 'creations').allowed).toBe(true);
  expect(l.tryAcquire('a', 'creations').allowed).toBe(false);
  expect(l.tryAcquire('b', 'creations').allowed).toBe(true);
  expect(l.tryAcquire('a', 'quotes').allowed).toBe(true);
  expect(l.tryAcquire('a', 'other').allowed).toBe(true);
  l.reset();
  expect(l.tryAcquire('a', 'creations').allowed).toBe(true);
});

test('large limits grow the buffer and keep order across wrap-around', () => {
  const { clock, l } = limiter({ ...PROVIDER_RATE_LIMITS, other: { limit: 1_000, windowMs: 10_000 } });
  const t0 = clock.t;
  for (let round = 0; round < 5; round++) {
    for (let i = 0; i < 1_000; i++) {
      clock.t = t0 + round * 10_000 + i;
      expect(l.tryAcquire('k', 'other').allowed).toBe(true);
    }
    expect(l.tryAcquire('k', 'other')).toEqual({ allowed: false, retryAfterMs: 10_000 - 999 });
  }
});

test('fractional windows (a scaled window) stay exact', () => {
  const { clock, l } = limiter({ ...PROVIDER_RATE_LIMITS, quotes: { limit: 1, windowMs: 600_000 / 7 } });
  const t0 = clock.t;
  l.tryAcquire('k', 'quotes');
  const d = l.tryAcquire('k', 'quotes');
  expect(d.allowed).toBe(false);
  if (!d.allowed) {
    expect(d.retryAfterMs).toBeCloseTo(600_000 / 7, 6);
    clock.t = t0 + Math.ceil(d.retryAfterMs);
    expect(l.tryAcquire('k', 'quotes').allowed).toBe(true);
  }
});

test('invalid limits are refused', () => {
  expect(() => new RollingWindowLimiter({ ...PROVIDER_RATE_LIMITS, other: { limit: 0, windowMs: 1 } }, Date.now)).toThrow(RangeError);
  expect(() => new RollingWindowLimiter({ ...PROVIDER_RATE_LIMITS, other: { limit: 1.5, windowMs: 1 } }, Date.now)).toThrow(RangeError);
  expect(() => new RollingWindowLimiter({ ...PROVIDER_RATE_LIMITS, other: { limit: 1, windowMs: 0 } }, Date.now)).toThrow(RangeError);
});

test('Retry-After rounds up to whole seconds, Retry-After-Ms to whole ms, both at least 1', () => {
  expect(retryAfterHeaders(47_655)).toEqual({ 'retry-after': '48', 'retry-after-ms': '47655' });
  expect(retryAfterHeaders(60_000)).toEqual({ 'retry-after': '60', 'retry-after-ms': '60000' });
  expect(retryAfterHeaders(1_000.2)).toEqual({ 'retry-after': '2', 'retry-after-ms': '1001' });
  expect(retryAfterHeaders(0.3)).toEqual({ 'retry-after': '1', 'retry-after-ms': '1' });
});
