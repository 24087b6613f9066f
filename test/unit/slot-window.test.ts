/**
 * The window-exact limiter's bookkeeping, driven with plain numbers: the rolling window is
 * never exceeded at the provider, every slot is used as soon as the window allows, food goes
 * first, identical quotes are shared, outages and 429s pause the family.
 */
import { RollingWindowLimiter } from '../../simulator/rate-limiter';
import { OUTAGE_AFTER, SlotWindow, type LimiterConfig, type SlotRequest } from '../../workflows/slot-window';

const config: LimiterConfig = { limit: 3, windowMs: 1_000, marginMs: 10, leaseMs: 5_000, quoteMinRemainingMs: 100, leadMs: 0 };
const req = (n: number, extra: Partial<SlotRequest> = {}): SlotRequest => ({ requestId: `wf-${n}#1`, food: false, requestedAt: n, ...extra });
const quote = (expiresAt: number) => ({ price: { amount: 990, currency: 'EUR' }, expires_at: new Date(expiresAt).toISOString() });

describe('SlotWindow', () => {
  it('hands out every slot of a window at once, then the next ones only a window (and margin) after each answer', () => {
    const w = SlotWindow.empty(config);
    for (let i = 0; i < 5; i++) w.request(req(i), 0);
    expect(w.grant(0).map((g) => g.requestId)).toEqual(['wf-0#1', 'wf-1#1', 'wf-2#1']);
    expect(w.grant(0)).toEqual([]); // all three held
    w.release({ requestId: 'wf-0#1', answeredAt: 40, outcome: 'answered' }, 50);
    expect(w.grant(500)).toEqual([]); // answered at 40: busy until 40 + 1000 + 10
    expect(w.nextChangeAt(500)).toBe(1_050);
    expect(w.grant(1_049)).toEqual([]);
    expect(w.grant(1_050).map((g) => g.requestId)).toEqual(['wf-3#1']);
  });

  it('grants a slot that frees within the lead time ahead, to be used from its time', () => {
    const w = SlotWindow.empty({ ...config, limit: 1, leadMs: 300 });
    w.request(req(1), 0);
    w.request(req(2), 0);
    expect(w.grant(0).map((g) => [g.requestId, g.notBefore])).toEqual([['wf-1#1', 0]]);
    w.release({ requestId: 'wf-1#1', answeredAt: 100, outcome: 'answered' }, 100); // busy until 1110
    expect(w.nextChangeAt(100)).toBe(1_110 - 300);
    expect(w.grant(809)).toEqual([]);
    expect(w.grant(810).map((g) => [g.requestId, g.notBefore])).toEqual([['wf-2#1', 1_110]]);
  });

  it.each([0, 2_000])('never lets a strict rolling-window provider refuse a call, and uses at least 99%% of the budget (lead %d ms)', (leadMs) => {
    // Simulated: 300 requests at once; each call reaches the provider `latency` after its grant (or
    // after its slot's time, granted ahead) and answers `latency` later; the provider is the
    // simulator's own limiter.
    let t = 0;
    const provider = new RollingWindowLimiter({ creations: { limit: 20, windowMs: 60_000 }, quotes: { limit: 1, windowMs: 1 }, other: { limit: 1, windowMs: 1 } }, () => t);
    const w = SlotWindow.empty({ ...config, limit: 20, windowMs: 60_000, marginMs: 50, leadMs });
    for (let i = 0; i < 300; i++) w.request(req(i), 0);
    const latency = 35;
    const inFlight: { id: string; arrives: number; answers: number }[] = [];
    let refused = 0;
    let done = 0;
    let lastArrival = 0;
    while (done < 300) {
      for (const g of w.grant(t)) inFlight.push({ id: g.requestId, arrives: Math.max(t, g.notBefore) + latency, answers: Math.max(t, g.notBefore) + 2 * latency });
      const next = Math.min(...inFlight.map((c) => c.answers), w.nextChangeAt(t) ?? Infinity);
      t = next;
      for (const c of inFlight.filter((x) => x.answers <= t)) {
        const saved = t;
        t = c.arrives;
        if (!provider.tryAcquire('key', 'creations').allowed) refused++;
        lastArrival = t;
        t = saved;
        w.release({ requestId: c.id, answeredAt: c.answers, outcome: 'answered' }, t);
        inFlight.splice(inFlight.indexOf(c), 1);
        done++;
      }
    }
    expect(refused).toBe(0);
    const leastPossible = (300 / 20 - 1) * 60_000; // 15 windows: the last batch starts after 14
    expect(leastPossible / lastArrival).toBeGreaterThanOrEqual(0.99);
  });

  it('serves food orders first, and otherwise keeps the order in which orders first asked', () => {
    const w = SlotWindow.empty({ ...config, limit: 1 });
    w.request(req(1), 0);
    w.request(req(2), 0);
    w.request(req(3, { food: true }), 0);
    w.request(req(0, { requestId: 'wf-0#2' }), 0); // a retry of an order that asked first
    const order: string[] = [];
    for (let t = 0; order.length < 4; t += 2_000) {
      for (const g of w.grant(t)) {
        order.push(g.requestId);
        w.release({ requestId: g.requestId, answeredAt: t, outcome: 'answered' }, t);
      }
    }
    expect(order).toEqual(['wf-3#1', 'wf-0#2', 'wf-1#1', 'wf-2#1']);
  });

  it('answers identical quote requests with the one quote while it is valid, and asks again once it is not', () => {
    const w = SlotWindow.empty(config);
    w.request(req(1, { fingerprint: 'f' }), 0);
    expect(w.request(req(2, { fingerprint: 'f' }), 0)).toEqual([]); // follows the one in flight
    expect(w.grant(0).map((g) => g.requestId)).toEqual(['wf-1#1']); // only one asks
    const answers = w.release({ requestId: 'wf-1#1', answeredAt: 10, outcome: 'answered', quote: quote(1_000) }, 10);
    expect(answers).toEqual([{ requestId: 'wf-2#1', slot: false, quote: quote(1_000) }]);
    expect(w.request(req(3, { fingerprint: 'f' }), 500)).toEqual([{ requestId: 'wf-3#1', slot: false, quote: quote(1_000) }]);
    expect(w.request(req(4, { fingerprint: 'f' }), 950)).toEqual([]); // 50 ms left < 100 ms minimum
    expect(w.request(req(5, { fingerprint: 'other' }), 950)).toEqual([]);
    expect(w.s.counts.reused).toBe(2);
  });

  it('lets the next identical request ask when the one it followed failed', () => {
    const w = SlotWindow.empty(config);
    w.request(req(1, { fingerprint: 'f' }), 0);
    w.request(req(2, { fingerprint: 'f' }), 0);
    w.grant(0);
    expect(w.release({ requestId: 'wf-1#1', answeredAt: 5, outcome: 'unavailable' }, 5)).toEqual([]);
    expect(w.grant(6).map((g) => g.requestId)).toEqual(['wf-2#1']);
  });

  it('pauses during an outage and then probes with one call at a time until an answer comes', () => {
    const w = SlotWindow.empty({ ...config, limit: 20, windowMs: 60_000 });
    for (let i = 0; i < 10; i++) w.request(req(i), 0);
    const first = w.grant(0);
    expect(first).toHaveLength(10);
    first.slice(0, OUTAGE_AFTER).forEach((g, i) => w.release({ requestId: g.requestId, answeredAt: 10 + i, outcome: 'unavailable' }, 10 + i));
    for (let i = 20; i < 25; i++) w.request(req(i), 20);
    expect(w.grant(20)).toEqual([]); // paused
    expect(w.nextChangeAt(20)).toBe(12 + 1_000);
    first.slice(OUTAGE_AFTER).forEach((g) => w.release({ requestId: g.requestId, answeredAt: 30, outcome: 'unavailable' }, 30));
    const probeAt = w.s.pause.until;
    expect(w.grant(probeAt)).toHaveLength(1); // only one probe
    expect(w.grant(probeAt)).toHaveLength(0);
    // A 5xx answer was not served, so it holds no slot for the window; a call without an answer may have been counted.
    expect(w.s.busyUntil).toEqual([]);
    w.release({ requestId: w.s.held[0]!.requestId, answeredAt: probeAt + 5, outcome: 'unreachable' }, probeAt + 5);
    expect(w.s.busyUntil).toEqual([probeAt + 5 + 60_000 + 10]);
  });

  it("ends an outage pause when another family's probe is answered, still with one probe first, and leaves a 429's pause alone", () => {
    const w = SlotWindow.empty({ ...config, limit: 20, windowMs: 600_000 });
    for (let i = 0; i < 5; i++) w.request(req(i), 0);
    for (const [i, g] of w.grant(0).entries()) w.release({ requestId: g.requestId, answeredAt: 10 + i, outcome: 'unavailable' }, 10 + i);
    expect(w.s.pause.probing).toBe(true);
    const pausedUntil = w.s.pause.until;
    expect(pausedUntil).toBeGreaterThan(1_000);
    w.request(req(8), 20);
    w.request(req(9), 20);
    expect(w.grant(500)).toEqual([]);
    w.providerBack(500);
    expect(w.grant(500).map((g) => g.requestId)).toEqual(['wf-8#1']); // at once, but one probe only
    expect(w.grant(500)).toEqual([]);
    expect(w.s.pause.probing).toBe(true);

    const limited = SlotWindow.empty(config);
    limited.request(req(1), 0);
    limited.request(req(2), 0);
    const [g] = limited.grant(0);
    limited.release({ requestId: g!.requestId, answeredAt: 5, outcome: 'rate_limited', retryAfterMs: 700 }, 5);
    limited.request(req(3), 6);
    limited.providerBack(10);
    expect(limited.grant(10)).toEqual([]); // the provider asked this family to wait
    expect(limited.grant(705)).toHaveLength(1);
  });

  it('waits for a 429 Retry-After before granting again, and takes back a slot whose holder never reports', () => {
    const w = SlotWindow.empty(config);
    w.request(req(1), 0);
    w.request(req(2), 0);
    const [g] = w.grant(0);
    w.grant(0);
    w.release({ requestId: g!.requestId, answeredAt: 5, outcome: 'rate_limited', retryAfterMs: 700 }, 5);
    w.request(req(3), 6);
    expect(w.grant(6)).toEqual([]);
    expect(w.grant(705).map((x) => x.requestId)).toEqual(['wf-3#1']);
    // A 429 took no slot at the provider, so none is held back for it.
    expect(w.s.busyUntil).toEqual([]);
    // wf-2's holder vanished: its lease ends at 5000 and the slot counts as used from then on.
    expect(w.free(4_999)).toBe(1);
    expect(w.free(5_000)).toBe(1);
    expect(w.s.counts.expired).toBe(0); // free() only looks
    expect(w.grant(5_000)).toEqual([]);
    expect(w.s.counts.expired).toBe(1);
    expect(w.s.held.map((x) => x.requestId)).toEqual(['wf-3#1']);
    expect(w.s.busyUntil).toEqual([5_000 + 1_000 + 10]);
  });
});
