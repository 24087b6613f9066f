/**
 * The Idempotency-Key header sent with a creation, derived from the caller's key (the delivery's
 * workflow ID, `delivery:<reference>`). A reference may be any Unicode text, and a header value
 * may not: undici refuses anything outside ISO-8859-1 and every control character. So the key is
 * never sent as it is, always derived, with one rule, so one order always maps to one header:
 *
 *   `dk_` + base64url(SHA-256(UTF-8 bytes of the key)), 46 ASCII characters.
 *
 * Deterministic across workers, runs and languages; distinct keys give distinct headers (SHA-256).
 */
import { createHash } from 'node:crypto';
import { ValidationError } from './errors';

export const IDEMPOTENCY_KEY_PREFIX = 'dk_';
export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';

export function idempotencyKeyHeader(key: string): string {
  if (typeof key !== 'string' || key.length === 0) {
    throw new ValidationError('an idempotency key is required to create a delivery', { details: [{ field: 'Idempotency-Key', message: 'must not be empty' }] });
  }
  // UTF-8 would encode every lone surrogate as U+FFFD, and two keys would share one header.
  if (/\p{Cs}/u.test(key)) {
    throw new ValidationError('the idempotency key cannot be sent', { details: [{ field: 'Idempotency-Key', message: 'must be well-formed Unicode (it has a lone surrogate)' }] });
  }
  return IDEMPOTENCY_KEY_PREFIX + createHash('sha256').update(key, 'utf8').digest('base64url');
}
