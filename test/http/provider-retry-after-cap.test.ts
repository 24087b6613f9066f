/**
 * A 429 with a huge Retry-After, over real HTTP: the client caps the wait where it parses it,
 * so no consumer (activity retry, limiter pause, bridge) waits longer than the cap, and the cap
 * is reported each time it applies.
 */
import { ProviderClient } from '../../provider/client';
import { DEFAULT_RETRY_AFTER_CAP_MS, RateLimitedError } from '../../provider/errors';
import { listenOnLoopback, type TestServer } from '../helpers/http';

let server: TestServer;
let retryAfter = '86400';

beforeAll(async () => {
  server = await listenOnLoopback((_req, res) => {
    res.writeHead(429, { 'content-type': 'application/json', 'retry-after': retryAfter });
    res.end(JSON.stringify({ error: { code: 'rate_limited', message: 'slow down' } }));
  });
});
afterAll(() => server.close());

async function rateLimited(client: ProviderClient): Promise<RateLimitedError> {
  const err = await client.getDelivery('del_1').catch((e: unknown) => e);
  expect(err).toBeInstanceOf(RateLimitedError);
  return err as RateLimitedError;
}

test('a day-long Retry-After is cut to the cap and reported; a short one is kept as is', async () => {
  const capped: { call: string; askedMs: number; cappedMs: number }[] = [];
  const client = new ProviderClient({ baseUrl: server.url, apiKey: 'k', retryAfterCap: { maxMs: 30_000, onCapped: (e) => capped.push(e) } });
  try {
    retryAfter = '86400';
    expect((await rateLimited(client)).retryAfterMs).toBe(30_000);
    expect(capped).toEqual([{ call: 'GET /v1/deliveries/del_1', askedMs: 86_400_000, cappedMs: 30_000 }]);
    retryAfter = 'Fri, 31 Dec 2100 23:59:59 GMT';
    expect((await rateLimited(client)).retryAfterMs).toBe(30_000);
    expect(capped).toHaveLength(2);
    retryAfter = '5';
    expect((await rateLimited(client)).retryAfterMs).toBe(5_000);
    expect(capped).toHaveLength(2);
  } finally {
    await client.close();
  }
});

test('without a configured cap, the contract\'s longest window is the cap', async () => {
  const client = new ProviderClient({ baseUrl: server.url, apiKey: 'k' });
  try {
    retryAfter = '86400';
    expect((await rateLimited(client)).retryAfterMs).toBe(DEFAULT_RETRY_AFTER_CAP_MS);
  } finally {
    await client.close();
  }
});
