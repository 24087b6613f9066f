/**
 * Courier accounts in the sandbox (docs/accounts.md): what an account holder sets up in the
 * courier's portal, registered here through PUT /_sim/accounts/<id> (`npm start` registers every
 * account of DELIVERY_ACCOUNTS_FILE). Each account has one key, its own rate windows (the
 * contract's, or its own limits), and its own webhook URL and secret: a delivery created with
 * the account's key sends its webhooks there, signed with that secret.
 *
 * The account's data scope is the digest of the first key it was registered with and stays so
 * when the key is replaced: a rotated key sees the account's deliveries, the old key is refused
 * at once (a revoked key), unless it is also the default key or one of SIMULATOR_API_KEYS, which
 * always work. Only key digests are kept, never a key.
 */
import { z } from 'zod';
import { ACCOUNT_ID, ACCOUNT_ID_RULE } from '../contract/accounts';
import { type CallFamily, parseRateLimits, PROVIDER_RATE_LIMITS, type RateLimit } from '../provider/limits';
import { WebhookSecretSchema } from '../provider/webhook-signature';
import { keyDigest } from './auth';
import type { WebhookEndpoint } from './webhooks';

export const SimAccountIdSchema = z.string().regex(ACCOUNT_ID, { message: ACCOUNT_ID_RULE });

/** The limits text of the registry and PROVIDER_RATE_LIMITS (`creations=20/60s,…`), provider time; families left out keep the simulator's. */
export const SimLimitsSchema = z.string().max(200).superRefine((text, ctx) => {
  try {
    parseRateLimits(text);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: (err as Error).message });
  }
});

/** The body of PUT /_sim/accounts/<id>. */
export const AccountRegistrationSchema = z
  .object({
    key: z.string().trim().min(1, { message: 'must be the API key of this account' }).max(512),
    webhook: z.object({ url: z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }), secret: WebhookSecretSchema }).strict().nullable().default(null),
    limits: SimLimitsSchema.optional(),
  })
  .strict();
export type AccountRegistration = z.output<typeof AccountRegistrationSchema>;

/** An account as the simulator keeps it (and its state file saves it). */
export interface SimAccount {
  id: string;
  /** Digest of the key it was first registered with: its data scope and rate windows. */
  scope: string;
  /** Digest of the key accepted now. */
  keyDigest: string;
  webhook: WebhookEndpoint | null;
  /** Provider-time limits text, when the account has its own. */
  limits: string | null;
}

/** Limits in provider time from a text, families left out from `base`. */
export function accountLimits(text: string | null, base: Readonly<Record<CallFamily, RateLimit>> = PROVIDER_RATE_LIMITS): Record<CallFamily, RateLimit> {
  return parseRateLimits(text ?? '', base);
}

export type RegisterResult = { ok: true; account: SimAccount; created: boolean } | { ok: false; message: string };

export class AccountBook {
  private readonly byId = new Map<string, SimAccount>();
  private readonly byKey = new Map<string, SimAccount>();
  private readonly byScope = new Map<string, SimAccount>();

  /** Registers or updates an account; a key of another account (current or first) is refused. */
  register(id: string, r: AccountRegistration): RegisterResult {
    const digest = keyDigest(r.key);
    const owner = this.byKey.get(digest) ?? this.byScope.get(digest);
    if (owner && owner.id !== id) return { ok: false, message: `this key belongs to another account` };
    const prior = this.byId.get(id);
    const account: SimAccount = { id, scope: prior?.scope ?? digest, keyDigest: digest, webhook: r.webhook, limits: r.limits ?? null };
    if (prior) this.byKey.delete(prior.keyDigest);
    this.put(account);
    return { ok: true, account, created: !prior };
  }

  private put(a: SimAccount): void {
    this.byId.set(a.id, a);
    this.byKey.set(a.keyDigest, a);
    this.byScope.set(a.scope, a);
  }

  remove(id: string): SimAccount | undefined {
    const a = this.byId.get(id);
    if (!a) return undefined;
    this.byId.delete(id);
    this.byKey.delete(a.keyDigest);
    this.byScope.delete(a.scope);
    return a;
  }

  get(id: string): SimAccount | undefined {
    return this.byId.get(id);
  }

  /** The account whose current key has this digest. */
  byKeyDigest(digest: string): SimAccount | undefined {
    return this.byKey.get(digest);
  }

  /** The account a data scope belongs to (a delivery's scope → its account). */
  ofScope(scope: string): SimAccount | undefined {
    return this.byScope.get(scope);
  }

  all(): SimAccount[] {
    return [...this.byId.values()];
  }

  /** From a state file. */
  restore(accounts: readonly SimAccount[]): void {
    for (const a of accounts) this.put({ ...a });
  }
}
