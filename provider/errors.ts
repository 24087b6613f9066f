/**
 * Typed errors of the provider client. Callers branch on `kind` (stable strings, also used as
 * Temporal ApplicationFailure types by the activities). No error ever carries the API key:
 * messages are built from the status, the provider's error body and our own words only, and are
 * scrubbed of the key before they are thrown.
 */
import type { FieldIssue } from './schemas';
import { describeIssues } from './validation';

export type ProviderErrorKind =
  | 'unauthorized'
  | 'not_found'
  | 'conflict'
  | 'validation'
  | 'rate_limited'
  | 'unavailable'
  | 'contract_violation';

export interface ProviderErrorInit {
  status?: number;
  code?: string;
  details?: FieldIssue[];
  cause?: unknown;
}

export abstract class ProviderError extends Error {
  abstract readonly kind: ProviderErrorKind;
  /** Whether the same call may succeed later without changing anything. */
  abstract readonly retryable: boolean;
  readonly status?: number;
  /** The provider's error code (`error.code` of its body), when it sent one. */
  readonly code?: string;
  /** Which fields were wrong and why, when known. */
  readonly details: FieldIssue[];

  constructor(message: string, init: ProviderErrorInit = {}) {
    const withDetails = init.details?.length ? `${message}: ${describeIssues(init.details)}` : message;
    super(withDetails, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.status = init.status;
    this.code = init.code;
    this.details = init.details ?? [];
  }
}

/** 401: missing or invalid API key. Retrying cannot help. */
export class UnauthorizedError extends ProviderError {
  readonly kind = 'unauthorized';
  readonly retryable = false;
}

export class NotFoundError extends ProviderError {
  readonly kind = 'not_found';
  readonly retryable = false;
}

/** 409: not allowed in the current status, or an idempotency key reused with another body. */
export class ConflictError extends ProviderError {
  readonly kind = 'conflict';
  readonly retryable = false;
}

/** 400, 413, 415, 422 from the provider, or a request our client refused to send. */
export class ValidationError extends ProviderError {
  readonly kind = 'validation';
  readonly retryable = false;
}

/** 429: wait `retryAfterMs` (from the provider's Retry-After) before the next attempt. */
export class RateLimitedError extends ProviderError {
  readonly kind = 'rate_limited';
  readonly retryable = true;
  constructor(
    message: string,
    readonly retryAfterMs: number,
    init: ProviderErrorInit = {},
  ) {
    super(message, init);
  }
}

/** 5xx, a timeout or a connection error: the provider may be fine again later. */
export class ProviderUnavailableError extends ProviderError {
  readonly kind = 'unavailable';
  readonly retryable = true;
}

/** The provider answered something that does not match the contract. */
export class ContractViolationError extends ProviderError {
  readonly kind = 'contract_violation';
  readonly retryable = false;
}

export function isProviderError(e: unknown): e is ProviderError {
  return e instanceof ProviderError;
}

/**
 * The longest wait a 429 may impose: the longest rolling window of the contract (quotes, 10
 * minutes). A provider that asks for more (by mistake, or a hostile or broken proxy) would
 * otherwise pause a whole call family for that long.
 */
export const DEFAULT_RETRY_AFTER_CAP_MS = 10 * 60_000;

export interface RetryAfterCap {
  maxMs: number;
  /** Told each time the cap applies (the worker and the bridge log a line and count a metric). */
  onCapped?: (event: { call: string; askedMs: number; cappedMs: number }) => void;
}

/** The provider's Retry-After, no longer than the cap. */
export function capRetryAfter(askedMs: number, call: string, cap: RetryAfterCap = { maxMs: DEFAULT_RETRY_AFTER_CAP_MS }): number {
  if (askedMs <= cap.maxMs) return askedMs;
  try {
    cap.onCapped?.({ call, askedMs, cappedMs: cap.maxMs });
  } catch {
    // Reporting must not change the answer.
  }
  return cap.maxMs;
}
