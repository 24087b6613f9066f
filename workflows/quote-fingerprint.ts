/**
 * A quote's fingerprint: SHA-256 over the inputs that decide its price (the order without its
 * reference numbers), keys sorted. Identical orders share a quote while it is valid; the hash
 * keeps addresses and phone numbers out of the limiter's state and the Web UI. Pure, so it runs
 * in workflow code as well as in the client.
 */
import { sha256 } from '@noble/hashes/sha256';
import { bytesToHex } from '@noble/hashes/utils';

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .filter((k) => k !== 'reference_number' && (value as Record<string, unknown>)[k] !== undefined)
        .sort()
        .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

export function quoteFingerprint(order: object): string {
  return bytesToHex(sha256(new TextEncoder().encode(JSON.stringify(canonical(order)))));
}
