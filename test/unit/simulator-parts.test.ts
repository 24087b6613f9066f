/** Small pure parts of the simulator: config from env, canonical JSON, logs, fingerprints, PRNG. */
import { createHash } from 'node:crypto';
import { keyFingerprint, KeyRing } from '../../simulator/auth';
import { CappedLog } from '../../simulator/capped-log';
import { TimeScale } from '../../simulator/clock';
import { simulatorConfigFromEnv } from '../../simulator/config';
import { mergeFaults, DEFAULT_FAULTS, roll, seededRandom } from '../../simulator/faults';
import { escapeHtml } from '../../simulator/http-util';
import { canonicalJson, newId } from '../../simulator/store';

describe('config from env', () => {
  test('defaults', () => {
    const c = simulatorConfigFromEnv({});
    expect(c.port).toBe(4010);
    expect(c.host).toBe('127.0.0.1');
    expect(c.options).toMatchObject({ apiKeys: [], timeScale: 1, currency: 'EUR', autoAdvanceMs: 0, webhook: null, seed: 1, rateLimits: {} });
  });

  test('every variable', () => {
    const c = simulatorConfigFromEnv({
      SIMULATOR_PORT: '0',
      SIMULATOR_HOST: '::1',
      SIMULATOR_API_KEYS: ' a, b ,,',
      SIMULATOR_TIME_SCALE: '60',
      SIMULATOR_CURRENCY: 'CHF',
      SIMULATOR_AUTO_ADVANCE_MS: '30000',
      SIMULATOR_WEBHOOK_URL: 'http://127.0.0.1:9/h',
      SIMULATOR_WEBHOOK_SECRET: 'whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0',
      SIMULATOR_SEED: '7',
      SIMULATOR_PUBLIC_BASE_URL: 'https://sandbox.example',
      SIMULATOR_RATE_LIMIT_CREATIONS: '1000',
      SIMULATOR_RATE_LIMIT_QUOTES: '2000',
      SIMULATOR_RATE_LIMIT_OTHER: '3000',
      SIMULATOR_WEBHOOK_TIMEOUT_MS: '500',
    });
    expect(c).toEqual({
      port: 0,
      host: '::1',
      options: {
        apiKeys: ['a', 'b'],
        timeScale: 60,
        currency: 'CHF',
        autoAdvanceMs: 30_000,
        webhook: { url: 'http://127.0.0.1:9/h', secret: 'whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0' },
        seed: 7,
        publicBaseUrl: 'https://sandbox.example',
        rateLimits: { creations: { limit: 1000 }, quotes: { limit: 2000 }, other: { limit: 3000 } },
        webhookTimeoutMs: 500,
      },
    });
  });

  test('wrong values name the variable; empty values count as unset', () => {
    expect(() => simulatorConfigFromEnv({ SIMULATOR_TIME_SCALE: '0' })).toThrow(/SIMULATOR_TIME_SCALE/);
    expect(() => simulatorConfigFromEnv({ SIMULATOR_PORT: 'x' })).toThrow(/SIMULATOR_PORT/);
    expect(() => simulatorConfigFromEnv({ SIMULATOR_WEBHOOK_URL: 'http://x/h' })).toThrow(/SIMULATOR_WEBHOOK_SECRET/);
    expect(() => simulatorConfigFromEnv({ SIMULATOR_CURRENCY: 'euro' })).toThrow(/SIMULATOR_CURRENCY/);
    expect(simulatorConfigFromEnv({ SIMULATOR_PORT: '' }).port).toBe(4010);
  });
});

test('canonicalJson ignores key order, keeps array order, never builds objects', () => {
  expect(canonicalJson({ b: 1, a: [2, { d: null, c: 'x' }] })).toBe(canonicalJson({ a: [2, { c: 'x', d: null }], b: 1 }));
  expect(canonicalJson([1, 2])).not.toBe(canonicalJson([2, 1]));
  expect(canonicalJson(JSON.parse('{"__proto__":{"x":1}}'))).toBe('{"__proto__":{"x":1}}');
  expect(({} as Record<string, unknown>).x).toBeUndefined();
});

test('ids: prefix and url-safe random part', () => {
  const ids = new Set(Array.from({ length: 1000 }, () => newId('evt')));
  expect(ids.size).toBe(1000);
  for (const id of ids) expect(id).toMatch(/^evt_[A-Za-z0-9_-]{16}$/);
});

test('key fingerprint is sha256 hex, first 12 chars; the key ring matches by digest', () => {
  expect(keyFingerprint('sandbox-key')).toBe(createHash('sha256').update('sandbox-key').digest('hex').slice(0, 12));
  const ring = new KeyRing(['extra']);
  expect(ring.authenticate('Bearer extra')).toMatchObject({ ok: true, caller: { fingerprint: keyFingerprint('extra') } });
  expect(ring.authenticate('bearer   sandbox-key')).toMatchObject({ ok: true });
  expect(ring.authenticate('Bearer nope')).toEqual({ ok: false, fingerprint: keyFingerprint('nope'), message: 'invalid API key' });
  expect(ring.authenticate(undefined)).toMatchObject({ ok: false, fingerprint: null });
  expect(ring.authenticate('Token sandbox-key')).toMatchObject({ ok: false });
});

test('capped log keeps the newest entries and continuous indexes', () => {
  const log = new CappedLog<{ n: number }>(100);
  for (let n = 0; n < 1_000; n++) log.push({ n });
  expect(log.length).toBeLessThanOrEqual(110);
  const all = log.since(0).entries;
  expect(all.at(-1)).toEqual({ index: 999, n: 999 });
  expect(all[0]?.index).toBe(1_000 - all.length);
  expect(log.since(995)).toEqual({ entries: [995, 996, 997, 998, 999].map((n) => ({ index: n, n })), next: 1_000 });
  expect(log.since(1_000)).toEqual({ entries: [], next: 1_000 });
  expect(log.since(990, 2).entries.map((e) => e.n)).toEqual([990, 991]);
});

test('seeded random is reproducible; roll never draws for 0 or 1', () => {
  const a = seededRandom(42);
  const b = seededRandom(42);
  const xs = Array.from({ length: 5 }, () => a());
  expect(xs).toEqual(Array.from({ length: 5 }, () => b()));
  for (const x of xs) expect(x >= 0 && x < 1).toBe(true);
  const r = jest.fn(() => 0.5);
  expect(roll(r, 0)).toBe(false);
  expect(roll(r, 1)).toBe(true);
  expect(r).not.toHaveBeenCalled();
});

test('mergeFaults validates and keeps unspecified fields', () => {
  expect(mergeFaults(DEFAULT_FAULTS, { error_rate: 0.25, latency_ms: undefined })).toEqual({ ...DEFAULT_FAULTS, error_rate: 0.25 });
  expect(() => mergeFaults(DEFAULT_FAULTS, { error_rate: 2 })).toThrow();
  expect(() => mergeFaults(DEFAULT_FAULTS, { unknown: 1 })).toThrow();
});

test('time scale divides provider durations', () => {
  expect(new TimeScale(60).real(60_000)).toBe(1_000);
  expect(() => new TimeScale(0)).toThrow(RangeError);
});

test('escapeHtml', () => {
  expect(escapeHtml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
});
