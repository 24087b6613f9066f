import { ValidationError } from '../../provider/errors';
import { IDEMPOTENCY_KEY_PREFIX, idempotencyKeyHeader } from '../../provider/idempotency';

/** What an HTTP header value may hold for every client and proxy: visible ASCII. */
const HEADER_SAFE = /^[\x21-\x7e]+$/;

describe('the Idempotency-Key header derived from a key', () => {
  const keys = [
    'delivery:ORD-1042',
    'delivery:ORD-€42',
    'delivery:注文-1001',
    'delivery:📦-1',
    'delivery:line\nbreak',
    'delivery:\u0000nul',
    'delivery:\u2028',
    'delivery:' + 'x'.repeat(10_000),
    ' ',
  ];

  it.each(keys)('is header-safe and 46 characters for %j', (key) => {
    const header = idempotencyKeyHeader(key);
    expect(header).toMatch(HEADER_SAFE);
    expect(header.startsWith(IDEMPOTENCY_KEY_PREFIX)).toBe(true);
    expect(header).toHaveLength(46);
  });

  it('is the documented rule: dk_ + base64url(SHA-256(UTF-8 of the key)), unpadded', () => {
    // Vectors made without our code: printf 'delivery:ORD-€42' | openssl dgst -sha256 -binary | basenc --base64url
    expect(idempotencyKeyHeader('delivery:ORD-€42')).toBe('dk_CmrkqCY_KhtspzllwRtF6dx8ui3UD0bE6DxwRNVkzqE');
    expect(idempotencyKeyHeader('delivery:注文-1001')).toBe('dk_jTuc7hrM0cpy5fJbdWfxzcUMFWiYC2uJ3y_xmjhBP68');
  });

  it('is the same for the same key, every time (one order, one key, across workers and runs)', () => {
    for (const key of keys) expect(idempotencyKeyHeader(key)).toBe(idempotencyKeyHeader(String(key)));
  });

  it('differs for distinct keys, including ones that differ only in normalization or case', () => {
    const similar = ['delivery:Müller', 'delivery:Mu\u0308ller', 'delivery:müller', 'delivery:ORD-1', 'delivery:ORD-1 ', 'delivery:ORD-l', ...keys];
    const headers = new Set(similar.map(idempotencyKeyHeader));
    expect(headers.size).toBe(new Set(similar).size);
    // A lot of sequential references, as an order system makes them.
    const many = new Set(Array.from({ length: 20_000 }, (_, i) => idempotencyKeyHeader(`delivery:ORD-${i}`)));
    expect(many.size).toBe(20_000);
  });

  it('refuses an empty key and one that is not well-formed Unicode, naming the header', () => {
    for (const key of ['', 'delivery:\ud800', 'delivery:\udfff']) {
      let err: unknown;
      try {
        idempotencyKeyHeader(key);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).retryable).toBe(false);
      expect((err as ValidationError).details.map((d) => d.field)).toEqual(['Idempotency-Key']);
    }
  });
});
