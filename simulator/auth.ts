/**
 * API keys. Keys are held only as SHA-256 digests: the full digest scopes data (a delivery made
 * with key A is invisible to key B), and its first 12 hex characters are the fingerprint shown in
 * logs and the dashboard. A raw key is never stored, logged or echoed.
 */
import { createHash } from 'node:crypto';
import { LOCAL_SANDBOX_KEY } from '../provider/config';

/** The key every simulator accepts; the only one ever printed (at startup). */
export const DEFAULT_SANDBOX_KEY = LOCAL_SANDBOX_KEY;

/** SHA-256 hex of a key: how keys are held and looked up. */
export function keyDigest(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}
const sha256Hex = keyDigest;

/** Non-reversible short form of a key for logs: sha256 hex, first 12 characters. */
export function keyFingerprint(key: string): string {
  return sha256Hex(key).slice(0, 12);
}

export interface Caller {
  /** The data scope: the key's digest, or its account's (accounts.ts). */
  scope: string;
  /** The scope's first 12 characters, kept with each record. */
  fingerprint: string;
}

/** `fingerprint` is the presented key's (for the request log), null when none was sent. */
export type AuthResult = { ok: true; caller: Caller; fingerprint: string } | { ok: false; fingerprint: string | null; message: string };

export class KeyRing {
  private readonly digests = new Set<string>();

  constructor(extraKeys: readonly string[] = []) {
    for (const k of [DEFAULT_SANDBOX_KEY, ...extraKeys]) {
      const key = k.trim();
      if (key) this.digests.add(sha256Hex(key));
    }
  }

  /** The accepted keys' digests (data scopes), the default key's first; for the dashboard's gauges. */
  scopes(): string[] {
    return [...this.digests];
  }

  get size(): number {
    return this.digests.size;
  }

  /**
   * Checks an `Authorization: Bearer <key>` header. Lookup is by digest, never by raw key: a
   * registered account's current key first (its data scope is the account's), then these keys.
   */
  authenticate(header: string | undefined, accountScope: (digest: string) => string | undefined = () => undefined): AuthResult {
    if (!header) return { ok: false, fingerprint: null, message: 'missing Authorization header (expected: Bearer <API key>)' };
    const m = /^Bearer[ \t]+(\S.*)$/i.exec(header);
    const token = m?.[1]?.trim();
    if (!token) return { ok: false, fingerprint: null, message: 'Authorization header must be: Bearer <API key>' };
    const digest = sha256Hex(token);
    const fingerprint = digest.slice(0, 12);
    const scope = accountScope(digest) ?? (this.digests.has(digest) ? digest : undefined);
    if (scope === undefined) return { ok: false, fingerprint, message: 'invalid API key' };
    return { ok: true, caller: { scope, fingerprint: scope.slice(0, 12) }, fingerprint };
  }
}
