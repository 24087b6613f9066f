/**
 * Standard Webhooks signatures (contract § Webhooks): `v1,<base64 HMAC-SHA256 of
 * "<id>.<timestamp>.<raw body>">` keyed with the bytes behind a `whsec_<base64>` secret.
 * The simulator signs with this; the bridge verifies with it. Tests check both against the
 * independent `standardwebhooks` package.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { WEBHOOK_TOLERANCE_MS } from './limits';

const SECRET_PREFIX = 'whsec_';

export function generateWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(24).toString('base64');
}

/** Standard Webhooks: the key behind a secret is 24 to 64 random bytes. */
export const WEBHOOK_SECRET_MIN_BYTES = 24;
export const WEBHOOK_SECRET_MAX_BYTES = 64;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * The key bytes behind `whsec_<base64>` (the prefix is optional, as in Standard Webhooks).
 * Strict: canonical base64 only (node's decoder skips junk characters and accepts a truncated
 * tail, so `whsec_!!AB??` would become a 1-byte key), and 24–64 bytes of key. The error never
 * quotes the secret.
 */
export function secretKey(secret: string): Buffer {
  const b64 = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  if (b64.length === 0 || !BASE64.test(b64)) throw new Error('a webhook secret must be whsec_<base64> (standard base64 alphabet, padded, nothing else)');
  const key = Buffer.from(b64, 'base64');
  if (key.toString('base64') !== b64) throw new Error('a webhook secret must be canonical base64');
  if (key.length < WEBHOOK_SECRET_MIN_BYTES || key.length > WEBHOOK_SECRET_MAX_BYTES) {
    throw new Error(`a webhook secret must hold ${WEBHOOK_SECRET_MIN_BYTES} to ${WEBHOOK_SECRET_MAX_BYTES} bytes of key, this one holds ${key.length}`);
  }
  return key;
}

/** A short, non-reversible name of a secret for pages and logs: 12 hex digits of its SHA-256. */
export function secretFingerprint(secret: string): string {
  return `sha256:${createHash('sha256').update(secret).digest('hex').slice(0, 12)}`;
}

function hmac(key: Buffer, id: string, timestampSeconds: number, body: Buffer | string): Buffer {
  return createHmac('sha256', key).update(`${id}.${timestampSeconds}.`).update(body).digest();
}

export interface SignedHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

export function signWebhook(secret: string, id: string, timestampSeconds: number, body: Buffer | string): SignedHeaders {
  const sig = hmac(secretKey(secret), id, timestampSeconds, body).toString('base64');
  return { 'webhook-id': id, 'webhook-timestamp': String(timestampSeconds), 'webhook-signature': `v1,${sig}` };
}

/** Signed with every secret (rotation): a receiver that knows any one of them verifies. */
export function signWebhookWithAll(secrets: readonly string[], id: string, timestampSeconds: number, body: Buffer | string): SignedHeaders {
  if (secrets.length === 0) throw new Error('no secret to sign with');
  const signatures = secrets.map((secret) => `v1,${hmac(secretKey(secret), id, timestampSeconds, body).toString('base64')}`);
  return { 'webhook-id': id, 'webhook-timestamp': String(timestampSeconds), 'webhook-signature': signatures.join(' ') };
}

export type VerifyFailure = 'missing_headers' | 'bad_timestamp' | 'timestamp_out_of_tolerance' | 'no_matching_signature';
export type VerifyResult = { ok: true } | { ok: false; reason: VerifyFailure };

/**
 * Checks the signature over the raw bytes against every configured secret (rotation), with a
 * replay window on the timestamp. Comparisons are length-checked, then constant-time.
 */
export function verifyWebhook(
  secrets: readonly string[],
  headers: { id?: string; timestamp?: string; signature?: string },
  body: Buffer,
  nowMs: number,
  toleranceMs: number = WEBHOOK_TOLERANCE_MS,
): VerifyResult {
  const { id, timestamp, signature } = headers;
  if (!id || !timestamp || !signature) return { ok: false, reason: 'missing_headers' };
  if (!/^\d{1,12}$/.test(timestamp)) return { ok: false, reason: 'bad_timestamp' };
  const ts = Number(timestamp);
  if (Math.abs(nowMs - ts * 1000) > toleranceMs) return { ok: false, reason: 'timestamp_out_of_tolerance' };

  const offered: Buffer[] = [];
  for (const part of signature.split(' ')) {
    const [version, value] = part.split(',', 2);
    if (version === 'v1' && value) offered.push(Buffer.from(value, 'base64'));
  }
  for (const secret of secrets) {
    const expected = hmac(secretKey(secret), id, ts, body);
    for (const candidate of offered) {
      if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) return { ok: true };
    }
  }
  return { ok: false, reason: 'no_matching_signature' };
}

/** A webhook secret as configuration accepts it: `whsec_<canonical base64 of 24–64 bytes>`. */
export const WebhookSecretSchema = z.string().superRefine((s, ctx) => {
  try {
    secretKey(s);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: (err as Error).message });
  }
});
