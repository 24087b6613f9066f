/**
 * The simulator's shared state, handed to the API, control and page modules. Built once by
 * server.ts; nothing here is global, so several simulators can run in one process (tests).
 */
import type { AccountBook, AccountRegistration, RegisterResult, SimAccount } from './accounts';
import type { CappedLog } from './capped-log';
import type { Clock, TimeScale } from './clock';
import type { Faults } from './faults';
import type { RollingWindowLimiter } from './rate-limiter';
import type { Store } from './store';
import type { AutoAdvancer, Lifecycle } from './transitions';
import type { WebhookSender } from './webhooks';

export interface RequestLogEntry {
  method: string;
  path: string;
  query: string;
  /** sha256 fingerprint of the presented key (never the key), or null when none was sent. */
  key_fingerprint: string | null;
  status: number;
  time: string;
  duration_ms: number;
  /** The W3C `traceparent` the caller sent (tracing on), or null when none or malformed. */
  traceparent: string | null;
}

export interface SimContext {
  readonly now: Clock;
  readonly scale: TimeScale;
  readonly currency: string;
  readonly store: Store;
  readonly lifecycle: Lifecycle;
  readonly auto: AutoAdvancer;
  readonly webhooks: WebhookSender;
  readonly limiter: RollingWindowLimiter;
  /** The data scopes of the accepted API keys and of the registered accounts (the limiter's and the store's scopes), the default key's first. */
  readonly keyScopes: readonly string[];
  /** Registered courier accounts (accounts.ts); kept across reset(). */
  readonly accounts: AccountBook;
  /** Registers or updates an account and applies its limits. */
  registerAccount(id: string, registration: AccountRegistration): RegisterResult;
  removeAccount(id: string): SimAccount | undefined;
  readonly requests: CappedLog<RequestLogEntry>;
  faults: Faults;
  random: () => number;
  /** Delivery id → how many of its next GET /v1/deliveries/{id} answer 503 (fault injection, cleared by reset). */
  failReads: Map<string, number>;
  /** Base of tracking links; the listen URL unless configured. */
  publicBaseUrl: string;
  /** Clears everything but the accounts: records, windows, logs, webhook endpoint; faults back to defaults. */
  reset(): void;
}
