import { retryAfterMs } from '../../provider/client';

describe('the wait a 429 asks for', () => {
  const now = Date.parse('2026-01-31T12:00:00Z');
  it('reads whole seconds', () => expect(retryAfterMs({ 'retry-after': '3' }, now)).toBe(3_000));
  it('prefers the exact milliseconds when sent', () => expect(retryAfterMs({ 'retry-after': '1', 'retry-after-ms': '250' }, now)).toBe(250));
  it('reads an HTTP date', () => expect(retryAfterMs({ 'retry-after': 'Sat, 31 Jan 2026 12:00:09 GMT' }, now)).toBe(9_000));
  it('falls back to one second when the header is missing or garbage', () => {
    expect(retryAfterMs({}, now)).toBe(1_000);
    expect(retryAfterMs({ 'retry-after': 'soon' }, now)).toBe(1_000);
  });
});
