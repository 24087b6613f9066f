import { providerConfigFromEnv } from '../../provider/config';

describe('DELIVERY_API_URL', () => {
  it('takes https anywhere and http only to loopback', () => {
    for (const url of ['https://api.example.com', 'http://127.0.0.1:4010', 'http://localhost:4010', 'http://[::1]:4010']) {
      expect(providerConfigFromEnv({ DELIVERY_API_URL: url }).baseUrl).toBe(url);
    }
    for (const url of ['http://api.example.com', 'http://10.0.0.5:4010', 'http://simulator:4010']) {
      expect(() => providerConfigFromEnv({ DELIVERY_API_URL: url, DELIVERY_API_KEY: 'live-key' })).toThrow(/DELIVERY_API_URL: must be https:\/\//);
    }
  });

  it('takes http to another host only with DELIVERY_API_ALLOW_HTTP=true (a sandbox on a private network)', () => {
    expect(providerConfigFromEnv({ DELIVERY_API_URL: 'http://simulator:4010', DELIVERY_API_ALLOW_HTTP: 'true' }).baseUrl).toBe('http://simulator:4010');
    expect(() => providerConfigFromEnv({ DELIVERY_API_URL: 'http://simulator:4010', DELIVERY_API_ALLOW_HTTP: 'yes' })).toThrow(/DELIVERY_API_ALLOW_HTTP/);
  });

  it('caps Retry-After at 10 minutes unless configured', () => {
    expect(providerConfigFromEnv({}).retryAfterCapMs).toBe(600_000);
    expect(providerConfigFromEnv({ DELIVERY_API_RETRY_AFTER_CAP_MS: '60000' }).retryAfterCapMs).toBe(60_000);
  });
});
