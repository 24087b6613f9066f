/**
 * The pacing gate's bookkeeping, driven with plain numbers: the rolling window is never exceeded
 * at the provider, every slot is used as soon as the window allows, food goes first, one order's
 * failures never stop the others, only failures of several orders mean an outage.
 */
import { RollingWindowLimiter } from '../../simulator/rate-limiter';
import type { GateConfig, GateRequest } from '../../contract/gate-messages';
import { GateState, OUTAGE_AFTER, UNAUTHORIZED_PROBE_MS, type Call } from '../../workflows/gate-state';

const config: GateConfig = { limits: { creations: { limit: 3, windowMs: 1_000 }, quotes: { limit: 3, windowMs: 1_000 } }, marginMs: 10, callTimeoutMs: 5_000, leadMs: 0, quoteMinRemainingMs: 100, historyLimit: 5_000 };
const req = (n: number, extra: Partial<GateRequest> = {}): GateRequest => ({ from: `wf-${n}`, n: 1, family: 'creations', food: false, requestedAt: n, order: {} as GateRequest['order'], ...extra });
const quote = (expiresAt: number) => ({ price: { amount: 990, currency: 'EUR' }, expires_at: new Date(expiresAt).toISOString() });
const ok = (c: Call) => ({ kind: 'answered' as const, answer: { n: c.req.n, delivery: {} as never } });
const ids = (calls: Call[]) => calls.map((c) => c.req.from);

describe('GateState', () => {
  it('uses every slot of a window at once, then each again only a window (and margin) after its call ended', () => {
    const g = GateState.empty(config);
    for (let i = 0; i < 5; i++) g.request(req(i), 0);
    const first = g.take(0);
    expect(ids(first)).toEqual(['wf-0', 'wf-1', 'wf-2']);
    expect(g.take(0)).toEqual([]);
    g.done(first[0]!, ok(first[0]!), 40); // busy until 40 + 1000 + 10
    expect(g.take(500)).toEqual([]);
    expect(g.nextChangeAt(500)).toBe(1_050);
    expect(ids(g.take(1_050))).toEqual(['wf-3']);
  });

  it('holds a creation slot from when its call ended, not from when its activity ended after answering the order (a second at most)', () => {
    const g = GateState.empty({ ...config, limits: { ...config.limits, creations: { limit: 1, windowMs: 1_000 } } });
    g.request(req(1), 0);
    g.request(req(2), 0);
    const [c] = g.take(0);
    g.done(c!, { ...ok(c!), afterCallMs: 30 }, 100); // the call ended at 70: busy until 70 + 1000 + 10
    expect(g.nextChangeAt(100)).toBe(1_080);
    const [d] = g.take(1_080);
    g.done(d!, { ...ok(d!), afterCallMs: 60_000 }, 1_100); // never more than the tell's bound
    expect(g.s.busyUntil.creations).toEqual([1_110]);
  });

  it("pauses every family on a 401 (the account's key), probing with one call per period, and goes on at once when a probe is answered", () => {
    const g = GateState.empty(config);
    for (let i = 0; i < 3; i++) g.request(req(i), 0);
    g.request(req(9, { family: 'quotes', fingerprint: 'f' }), 0);
    const first = g.take(0);
    expect(first).toHaveLength(4);
    // Every call of the first window is refused: each order goes back to its place, none is answered.
    for (const c of first) expect(g.done(c, { kind: 'unauthorized' }, 50)).toEqual([]);
    expect(g.s.unauthorizedSince).toBe(50);
    // Nothing goes out before the probe time, quotes neither (the key is the account's), though the window's slots are free.
    for (const t of [1_000, 2_000, 49 + UNAUTHORIZED_PROBE_MS]) expect(g.take(t)).toEqual([]);
    const probe = g.take(50 + UNAUTHORIZED_PROBE_MS);
    expect(ids(probe)).toEqual(['wf-0']); // one probe, the first order waiting
    expect(g.take(50 + UNAUTHORIZED_PROBE_MS)).toEqual([]); // while it is out, nothing else
    g.done(probe[0]!, ok(probe[0]!), 6_000);
    expect(g.s.unauthorizedSince).toBeUndefined();
    expect(ids(g.take(6_000)).sort()).toEqual(['wf-1', 'wf-2', 'wf-9']);
  });

  it("probes every period whatever the account's limit: a refused call takes no slot (the courier counts per key, and a refused key is none)", () => {
    const g = GateState.empty({ ...config, limits: { ...config.limits, creations: { limit: 1, windowMs: 60_000 } } });
    for (let i = 0; i < 2; i++) g.request(req(i), 0);
    let [call] = g.take(0);
    for (let t = 50; t < 20_000; t += UNAUTHORIZED_PROBE_MS) {
      g.done(call!, { kind: 'unauthorized' }, t);
      expect(g.take(t + UNAUTHORIZED_PROBE_MS - 1)).toEqual([]);
      [call] = g.take(t + UNAUTHORIZED_PROBE_MS); // the next probe, not a window later
      expect(ids([call!])).toEqual(['wf-0']);
    }
    g.done(call!, ok(call!), 20_100);
    expect(g.take(20_100)).toEqual([]); // the accepted one holds the only slot for its window
    expect(ids(g.take(20_100 + 60_000 + config.marginMs))).toEqual(['wf-1']);
  });

  it("takes the settings an ask carries (a worker restarted with new ones), and keeps them over asks of builds without", () => {
    const g = GateState.empty(config);
    const restarted = { ...config, marginMs: 500, limits: { ...config.limits, creations: { limit: 1, windowMs: 2_000 } } };
    g.request(req(0, { config: restarted, limits: restarted.limits }), 0);
    g.request(req(1), 0);
    expect(g.s.config).toEqual(restarted);
    const [first] = g.take(0);
    g.done(first!, ok(first!), 100);
    expect(g.take(2_599)).toEqual([]); // held a window and the new margin from its end
    expect(ids(g.take(2_600))).toEqual(['wf-1']);
  });

  it('paces by the limits its latest ask carries (the registry as the asking worker read it), over the windows it already holds', () => {
    const g = GateState.empty(config); // 3 a window
    const one = { creations: { limit: 1, windowMs: 1_000 }, quotes: config.limits.quotes };
    for (let i = 0; i < 3; i++) g.request(req(i), 0);
    const first = g.take(0);
    expect(ids(first)).toEqual(['wf-0', 'wf-1', 'wf-2']);
    for (const c of first) g.done(c, ok(c), 10); // three slots held until 1_020
    g.request(req(3, { limits: one }), 20);
    g.request(req(4), 20); // an ask with no limits (a build before them) keeps the latest
    expect(g.s.config.limits.creations).toEqual({ limit: 1, windowMs: 1_000 });
    expect(g.take(1_019)).toEqual([]);
    expect(ids(g.take(1_020))).toEqual(['wf-3']); // one a window now, though three slots came free
    expect(g.take(1_020)).toEqual([]);
    g.request(req(5, { limits: { ...one, creations: { limit: 4, windowMs: 1_000 } } }), 1_030);
    expect(ids(g.take(1_030))).toEqual(['wf-4', 'wf-5']); // raised: the free slots serve at once
  });

  it('after a lowered limit, with a lead time, takes a slot only when enough held windows have passed, not as each of them passes', () => {
    const g = GateState.empty({ ...config, leadMs: 300 }); // 3 a window
    for (let i = 0; i < 3; i++) g.request(req(i), 0);
    const first = g.take(0);
    first.forEach((c, i) => g.done(c, ok(c), 10 + 40 * i)); // held until 1_020, 1_060, 1_100
    const one = { creations: { limit: 1, windowMs: 1_000 }, quotes: config.limits.quotes };
    for (let i = 3; i < 6; i++) g.request(req(i, { limits: one }), 100);
    expect(g.take(799)).toEqual([]); // the third window passes at 1_100, beyond the lead time
    const next = g.take(800);
    expect(next.map((c) => [c.req.from, c.notBefore])).toEqual([['wf-3', 1_100]]);
    expect(g.take(1_100)).toEqual([]); // one a window: the next only after wf-3's call
    g.done(next[0]!, ok(next[0]!), 1_150);
    expect(g.take(1_150 + 1_000 + 10 - 300 - 1)).toEqual([]);
    expect(ids(g.take(1_150 + 1_000 + 10 - 300))).toEqual(['wf-4']);
  });

  it('an idle gate has nothing to wake up for: no timer', () => {
    const g = GateState.empty(config);
    g.request(req(1), 0);
    const [c] = g.take(0);
    g.done(c!, ok(c!), 10);
    expect(g.nextChangeAt(10)).toBeUndefined();
  });

  it('schedules a call for a slot that frees within the lead time, to go out at the slot time', () => {
    const g = GateState.empty({ ...config, limits: { ...config.limits, creations: { limit: 1, windowMs: 1_000 } }, leadMs: 300 });
    g.request(req(1), 0);
    g.request(req(2), 0);
    const [c] = g.take(0);
    g.done(c!, ok(c!), 100); // busy until 1110
    expect(g.nextChangeAt(100)).toBe(810);
    expect(g.take(809)).toEqual([]);
    expect(g.take(810).map((x) => [x.req.from, x.notBefore])).toEqual([['wf-2', 1_110]]);
  });

  it.each([0, 2_000])('never lets a strict rolling-window provider refuse a call, and uses at least 99%% of the budget (lead %d ms)', (leadMs) => {
    let t = 0;
    const provider = new RollingWindowLimiter({ creations: { limit: 20, windowMs: 60_000 }, quotes: { limit: 1, windowMs: 1 }, other: { limit: 1, windowMs: 1 } }, () => t);
    const g = GateState.empty({ ...config, limits: { ...config.limits, creations: { limit: 20, windowMs: 60_000 } }, marginMs: 50, leadMs });
    for (let i = 0; i < 300; i++) g.request(req(i), 0);
    const latency = 35;
    const out: { call: Call; arrives: number; ends: number }[] = [];
    let refused = 0;
    let lastArrival = 0;
    for (let done = 0; done < 300; ) {
      for (const c of g.take(t)) out.push({ call: c, arrives: Math.max(t, c.notBefore) + latency, ends: Math.max(t, c.notBefore) + 2 * latency });
      t = Math.min(...out.map((c) => c.ends), g.nextChangeAt(t) ?? Infinity);
      for (const c of out.filter((x) => x.ends <= t)) {
        const saved = t;
        t = c.arrives;
        if (!provider.tryAcquire('key', 'creations').allowed) refused++;
        lastArrival = t;
        t = saved;
        g.done(c.call, ok(c.call), t);
        out.splice(out.indexOf(c), 1);
        done++;
      }
    }
    expect(refused).toBe(0);
    expect(((300 / 20 - 1) * 60_000) / lastArrival).toBeGreaterThanOrEqual(0.99);
  });

  it('serves food first, otherwise in the order orders first asked', () => {
    const g = GateState.empty({ ...config, limits: { ...config.limits, creations: { limit: 4, windowMs: 1_000 } } });
    g.request(req(1), 0);
    g.request(req(2), 0);
    g.request(req(3, { food: true }), 0);
    g.request(req(0, { n: 2 }), 0); // asked again, first asked before the others
    expect(ids(g.take(0))).toEqual(['wf-3', 'wf-0', 'wf-1', 'wf-2']);
  });

  it("backs one failing order off on its own: the others keep every slot, and no outage is declared", () => {
    const g = GateState.empty(config);
    g.request(req(0), 0);
    for (let i = 1; i <= 20; i++) g.request(req(i), 0);
    let served = 0;
    let poisonCalls = 0;
    for (let t = 0; t < 10_000; t += 10) {
      for (const c of g.take(t)) {
        if (c.req.from === 'wf-0') {
          poisonCalls++;
          g.done(c, { kind: 'unavailable' }, t);
        } else {
          served++;
          g.done(c, ok(c), t);
        }
      }
    }
    expect(served).toBe(20);
    expect(poisonCalls).toBeLessThanOrEqual(5); // 1 + 2 + 4 s of backoff within 10 s
    expect(g.status(10_000).outage).toBe(false);
  });

  it(`declares an outage after ${OUTAGE_AFTER} different orders failed in a row, then sends one probe at a time`, () => {
    const g = GateState.empty({ ...config, limits: { ...config.limits, creations: { limit: 10, windowMs: 60_000 } } });
    for (let i = 0; i < 6; i++) g.request(req(i), 0);
    const calls = g.take(0);
    for (const c of calls.slice(0, OUTAGE_AFTER)) g.done(c, { kind: 'unavailable' }, 10);
    for (const c of calls.slice(OUTAGE_AFTER)) g.done(c, { kind: 'unreachable' }, 10);
    expect(g.status(10).outage).toBe(true);
    expect(g.take(20)).toEqual([]); // pausing
    const probe = g.take(60_000);
    expect(probe).toHaveLength(1);
    expect(g.take(60_000)).toEqual([]); // one at a time
    g.done(probe[0]!, ok(probe[0]!), 60_010);
    expect(g.status(60_010).outage).toBe(false);
  });

  it('pauses a family until Retry-After on a 429, without counting the refused call', () => {
    const g = GateState.empty(config);
    for (let i = 0; i < 4; i++) g.request(req(i), 0);
    const [a] = g.take(0);
    g.done(a!, { kind: 'rate_limited', retryAfterMs: 500 }, 10);
    expect(g.take(100)).toEqual([]);
    expect(g.status(100)).toMatchObject({ pausedForMs: { creations: 410, quotes: 0 } });
    expect(ids(g.take(510))).toEqual(['wf-0']); // its place kept; the slot it used is free
  });

  it('withdraws a waiting order at once, and one whose call is out when that call ends', () => {
    const g = GateState.empty({ ...config, limits: { ...config.limits, creations: { limit: 1, windowMs: 1_000 } } });
    g.request(req(1), 0);
    g.request(req(2), 0);
    const [c] = g.take(0);
    expect(g.withdraw({ from: 'wf-2', n: 1 })).toEqual({ n: 1, withdrawn: true });
    expect(g.withdraw({ from: 'wf-1', n: 1 })).toBeUndefined();
    expect(g.done(c!, { kind: 'unavailable' }, 5)).toEqual([{ to: 'wf-1', answer: { n: 1, withdrawn: true } }]);
    expect(g.status(5).waiting).toBe(0);
  });

  it('shares one valid quote among identical orders, asking once', () => {
    const g = GateState.empty(config);
    const q = (n: number) => req(n, { family: 'quotes', fingerprint: 'f1' });
    g.request(q(1), 0);
    g.request(q(2), 0);
    const calls = g.take(0);
    expect(ids(calls)).toEqual(['wf-1']); // its twin waits for this quote
    const answers = g.done(calls[0]!, { kind: 'answered', quote: quote(10_000), answer: { n: 1, quote: quote(10_000), shared: false } }, 10);
    expect(answers.map((a) => a.to)).toEqual(['wf-1', 'wf-2']);
    expect(g.request(q(3), 20)).toMatchObject({ shared: true });
    expect(g.request(q(4), 9_950)).toBeUndefined(); // too close to expiry: asks
  });

  it('keeps what it knows of an order asked again: its earlier attempt may have reached the provider, and a request sent twice is made once', () => {
    const g = GateState.empty(config);
    g.request(req(1, { unclear: true }), 0);
    const [c] = g.take(0);
    expect(c!.req.unclear).toBe(true); // the creation looks the delivery up first
    const [answer] = g.done(c!, ok(c!), 10);
    g.answer(answer!.to, answer!.answer);
    expect(g.request(req(1, { unclear: true }), 20)).toBeUndefined(); // the same request again (its local activity retried)
    expect(g.take(20)).toEqual([]);
  });
  it('creates right after a quote asked with `create` that is within the maximum price, and answers both at once', () => {
    const g = GateState.empty({ ...config, limits: { creations: { limit: 1, windowMs: 1_000 }, quotes: { limit: 3, windowMs: 1_000 } } });
    const max = { amount: 1_000, currency: 'EUR' };
    g.request(req(1, { family: 'creations', requestedAt: 5 }), 0); // asked for its creation later than the next two first asked
    g.request(req(2, { family: 'quotes', fingerprint: 'f2', requestedAt: 1, create: { maxPrice: max } }), 0);
    g.request(req(3, { family: 'quotes', fingerprint: 'f3', requestedAt: 2, create: { maxPrice: { amount: 500, currency: 'EUR' } } }), 0);
    const calls = g.take(0);
    expect(calls.map((c) => [c.req.from, c.req.family])).toEqual([['wf-1', 'creations'], ['wf-2', 'quotes'], ['wf-3', 'quotes']]);
    const answered = (c: Call) => ({ kind: 'answered' as const, quote: quote(10_000), answer: { n: c.req.n, quote: quote(10_000), shared: false } });
    // 9.90 EUR ≤ 10.00 EUR: its creation is queued, and the order hears of its quote meanwhile
    expect(g.done(calls[1]!, answered(calls[1]!), 10)).toEqual([{ to: 'wf-2', answer: { n: 1, quote: quote(10_000), shared: false, creating: true } }]);
    expect(g.done(calls[2]!, answered(calls[2]!), 10)).toEqual([{ to: 'wf-3', answer: { n: 1, quote: quote(10_000), shared: false } }]); // over 5.00 EUR: the order decides
    g.done(calls[0]!, ok(calls[0]!), 20);
    const [creation] = g.take(1_030);
    expect([creation!.req.from, creation!.req.family, creation!.req.quote]).toEqual(['wf-2', 'creations', quote(10_000)]);
    expect(g.withdraw({ from: 'wf-2', n: 1 })).toBeUndefined(); // its call is out: answered when it ends
    expect(g.done(creation!, ok(creation!), 1_040)).toEqual([{ to: 'wf-2', answer: { n: 1, delivery: {} } }]);
  });

  it('answers a quote asked with `answerOnce` with its delivery alone when the creation goes out at once, and tells the quote first when it must wait', () => {
    const g = GateState.empty({ ...config, limits: { creations: { limit: 1, windowMs: 1_000 }, quotes: { limit: 3, windowMs: 1_000 } } });
    const q = (n: number, fingerprint: string) => req(n, { family: 'quotes', fingerprint, create: { answerOnce: true } });
    g.request(q(1, 'f1'), 0);
    g.request(q(2, 'f2'), 0);
    const [a, b] = g.take(0);
    const quoted = (c: Call) => ({ kind: 'answered' as const, quote: quote(10_000), answer: { n: c.req.n, quote: quote(10_000), shared: false } });
    expect(g.done(a!, quoted(a!), 10)).toEqual([]); // a creation slot is free: no answer yet
    expect(g.done(b!, quoted(b!), 10)).toEqual([{ to: 'wf-2', answer: { n: 1, quote: quote(10_000), shared: false, creating: true } }]); // the one slot is wf-1's: wf-2 waits, and hears of its quote
    const [creation] = g.take(10);
    expect([creation!.req.from, creation!.req.quote]).toEqual(['wf-1', quote(10_000)]);
    expect(g.done(creation!, ok(creation!), 20)).toEqual([{ to: 'wf-1', answer: { n: 1, delivery: {} } }]); // the gate workflow adds creation.req.quote to the answer
    g.answer('wf-1', { n: 1, delivery: {} as never });
    expect(g.request(q(1, 'f1'), 30)).toBeUndefined(); // asked again (its local activity retried): not made again
    expect(g.take(30)).toEqual([]);
  });

  it('marks a creation that follows a shared quote', () => {
    const g = GateState.empty(config);
    const q = (n: number) => req(n, { family: 'quotes', fingerprint: 'f1', create: { answerOnce: true } });
    g.request(q(1), 0);
    const [call] = g.take(0);
    g.done(call!, { kind: 'answered', quote: quote(10_000), answer: { n: 1, quote: quote(10_000), shared: false } }, 10);
    expect(g.request(q(2), 20)).toBeUndefined(); // the shared quote, its creation queued
    expect(g.take(20).map((c) => [c.req.from, c.req.quoteShared])).toEqual([['wf-1', undefined], ['wf-2', true]]);
  });

  it('creates after a shared quote too, and never after a quote whose order was withdrawn meanwhile', () => {
    const g = GateState.empty(config);
    const q = (n: number) => req(n, { family: 'quotes', fingerprint: 'f1', create: {} });
    g.request(q(1), 0);
    g.request(q(2), 0);
    const [call] = g.take(0);
    g.withdraw({ from: 'wf-1', n: 1 });
    const answers = g.done(call!, { kind: 'answered', quote: quote(10_000), answer: { n: 1, quote: quote(10_000), shared: false } }, 10);
    expect(answers).toEqual([
      { to: 'wf-1', answer: { n: 1, quote: quote(10_000), shared: false } }, // no creation for the cancelled order
      { to: 'wf-2', answer: { n: 1, quote: quote(10_000), shared: true, creating: true } },
    ]);
    expect(g.take(10).map((c) => [c.req.from, c.req.family])).toEqual([['wf-2', 'creations']]); // its twin's creation
    expect(g.request(q(3), 20)).toEqual({ n: 1, quote: quote(10_000), shared: true, creating: true }); // a later twin: created from the shared quote
    expect(g.take(20).map((c) => c.req.from)).toEqual(['wf-3']);
  });
});
