/**
 * Provider errors as Temporal failures with stable types. Unauthorized, validation, conflict,
 * not-found and contract violations are non-retryable (retrying cannot help, and a bad key must
 * not become a retry storm); a 429 retries after exactly the provider's Retry-After; an
 * unavailable provider retries with the activity's backoff.
 */
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { isProviderError, RateLimitedError } from '../provider/errors';
import { PROVIDER_FAILURE_TYPES } from '../contract/failures';

export function toApplicationFailure(err: unknown): unknown {
  if (!isProviderError(err)) return err;
  return ApplicationFailure.create({
    type: PROVIDER_FAILURE_TYPES[err.kind],
    message: err.message,
    nonRetryable: !err.retryable,
    nextRetryDelay: err instanceof RateLimitedError ? err.retryAfterMs : undefined,
    // A refused key is told once a pause, by the pause's own line and count (activities/account-pauses.ts):
    // benign, so the SDK logs each probe's refusal at debug, not as a warning every period.
    ...(err.kind === 'unauthorized' && { category: ApplicationFailureCategory.BENIGN }),
    // Field names and the provider's code only: never request bodies (personal data) or keys.
    // retryAfterMs again here: a workflow sees details, not nextRetryDelay (not decoded by the SDK).
    details: [{ status: err.status, code: err.code, fields: err.details, retryAfterMs: err instanceof RateLimitedError ? err.retryAfterMs : undefined }],
  });
}

/** Wraps an activity so provider errors leave it as typed ApplicationFailures. */
export function withProviderFailures<A extends unknown[], R>(fn: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return async (...args: A) => {
    try {
      return await fn(...args);
    } catch (err) {
      throw toApplicationFailure(err);
    }
  };
}
