/**
 * How the API client classifies what a misbehaving provider does, against real HTTP servers on
 * 127.0.0.1 that misbehave on purpose: 5xx, silence, a closed port, a body off the contract.
 * Also: the API key never appears in anything thrown.
 */
import { ProviderClient } from '../../provider/client';
import { ContractViolationError, ProviderUnavailableError, RateLimitedError, UnauthorizedError } from '../../provider/errors';
import { freePort } from '../../scripts/temporal-dev-server';
import { deliveryRequest } from '../fixtures/orders';
import { listenOnLoopback, type TestServer } from '../helpers/http';
import { rejectionOf } from '../helpers/rejection';

const API_KEY = 'sk_live_very_secret_key_0123456789';

function everythingSaid(e: Error): string {
  return JSON.stringify({ message: e.message, stack: e.stack, cause: String((e as { cause?: unknown }).cause), own: { ...e } });
}

describe('the API client facing a misbehaving provider', () => {
  let server: TestServer;
  let answer: (path: string, headers: Record<string, unknown>) => { status: number; headers?: Record<string, string>; body?: string } | 'hang';
  let seenAuthorization: string | undefined;

  beforeAll(async () => {
    server = await listenOnLoopback((req, res) => {
      seenAuthorization = req.headers.authorization;
      const a = answer(req.url ?? '', req.headers);
      if (a === 'hang') return; // never answers
      res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers });
      res.end(a.body ?? '');
    });
  });
  afterAll(() => server.close());

  const client = () => new ProviderClient({ baseUrl: server.url, apiKey: API_KEY, timeoutMs: 500 });

  it('sends the key as a Bearer token', async () => {
    answer = () => ({ status: 200, body: JSON.stringify({ valid: true }) });
    await expect(client().checkKey()).resolves.toEqual({ valid: true });
    expect(seenAuthorization).toBe(`Bearer ${API_KEY}`);
  });

  it('classifies 503 as unavailable (retryable)', async () => {
    answer = () => ({ status: 503, body: JSON.stringify({ error: { code: 'service_unavailable', message: 'down for maintenance' } }) });
    const e = await rejectionOf(client().getDelivery('del_1'));
    expect(e).toBeInstanceOf(ProviderUnavailableError);
    expect(e).toMatchObject({ kind: 'unavailable', retryable: true, status: 503, code: 'service_unavailable' });
    expect(e.message).toContain('down for maintenance');
  });

  it('classifies a 500 with an HTML body as unavailable, not as a crash', async () => {
    answer = () => ({ status: 500, headers: { 'content-type': 'text/html' }, body: '<html>oops</html>' });
    expect(await rejectionOf(client().getDelivery('del_1'))).toBeInstanceOf(ProviderUnavailableError);
  });

  it('gives up after the timeout when the provider never answers', async () => {
    answer = () => 'hang';
    const started = Date.now();
    const e = await rejectionOf(client().getDelivery('del_1'));
    expect(e).toBeInstanceOf(ProviderUnavailableError);
    expect(e.message).toMatch(/no answer within 500 ms/);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("stops at once when the caller's signal aborts, with the caller's reason", async () => {
    answer = () => 'hang';
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('order withdrawn')), 50);
    const e = await rejectionOf(new ProviderClient({ baseUrl: server.url, apiKey: API_KEY, timeoutMs: 10_000 }).getDelivery('del_1', { signal: controller.signal }));
    expect(e.message).toBe('order withdrawn');
  });

  it('classifies a refused connection as unavailable', async () => {
    const port = await freePort();
    const e = await rejectionOf(new ProviderClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: API_KEY }).checkKey());
    expect(e).toBeInstanceOf(ProviderUnavailableError);
    expect(e.message).toMatch(/ECONNREFUSED/);
  });

  it('reports an answer off the contract, naming the field', async () => {
    answer = () => ({ status: 200, body: JSON.stringify({ price: { amount: '12.50', currency: 'EUR' }, expires_at: '2026-01-31T12:00:00Z' }) });
    const e = await rejectionOf(client().quote(deliveryRequest()));
    expect(e).toBeInstanceOf(ContractViolationError);
    expect(e.message).toContain('price.amount');
  });

  it('reports a success that is not JSON', async () => {
    answer = () => ({ status: 200, body: 'OK' });
    expect(await rejectionOf(client().checkKey())).toBeInstanceOf(ContractViolationError);
  });

  it('takes the wait of a 429 from Retry-After', async () => {
    answer = () => ({ status: 429, headers: { 'retry-after': '17' }, body: JSON.stringify({ error: { code: 'rate_limited', message: 'slow down' } }) });
    const e = await rejectionOf(client().checkKey());
    expect(e).toBeInstanceOf(RateLimitedError);
    expect((e as RateLimitedError).retryAfterMs).toBe(17_000);
  });

  it('never puts the API key in anything it throws, even when the provider echoes it', async () => {
    answer = () => ({ status: 401, body: JSON.stringify({ error: { code: 'unauthorized', message: `key ${API_KEY} is not valid` } }) });
    const e401 = await rejectionOf(client().checkKey());
    expect(e401).toBeInstanceOf(UnauthorizedError);
    answer = () => ({ status: 503, body: JSON.stringify({ error: { code: 'x', message: `upstream rejected Bearer ${API_KEY}` } }) });
    const e503 = await rejectionOf(client().checkKey());
    for (const e of [e401, e503]) expect(everythingSaid(e)).not.toContain(API_KEY);
    expect(e503.message).toContain('[redacted]');
  });
});
