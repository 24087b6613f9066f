/**
 * Standard Webhooks signatures (contract § Webhooks): `v1,<base64 HMAC-SHA256 of
 * "<id>.<timestamp>.<raw body>">` keyed with the bytes behind a `whsec_<base64>` secret.
 * The simulator signs with this; the bridge verifies with it. Tests check both against the
 * independent `standardwebhooks` package.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { WEBHOOK_TOLERANCE_MS } from './limits';

const SECRET_PREFIX = 'whsec_';

export function generateWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(24).toString('base64');
}

export function secretKey(secret: string): Buffer {
  const b64 = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const key = Buffer.from(b64, 'base64');
  if (key.length === 0) throw new Error('webhook secret is empty or not base64 (expected whsec_<base64>)');
  return key;
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

/** A webhook secret as configuration accepts it: `whsec_<base64>` with a non-empty key. */
export const WebhookSecretSchema = z.string().refine(
  (s) => {
    try {
      return secretKey(s).length > 0;
    } catch {
      return false;
    }
  },
  { message: 'must be whsec_<base64>' },
);
