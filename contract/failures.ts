/**
 * Stable ApplicationFailure types, shared by activities (which throw them) and workflows and
 * clients (which branch on them). One per provider error kind, plus the workflow's own endings.
 */
import type { ProviderErrorKind } from '../provider/errors';

export const PROVIDER_FAILURE_TYPES: Record<ProviderErrorKind, string> = {
  unauthorized: 'ProviderUnauthorized',
  not_found: 'ProviderNotFound',
  conflict: 'ProviderConflict',
  validation: 'ProviderValidation',
  rate_limited: 'ProviderRateLimited',
  unavailable: 'ProviderUnavailable',
  contract_violation: 'ProviderContractViolation',
};

/** Errors retrying cannot fix; listed in retry policies as well as marked on the failure. */
export const NON_RETRYABLE_PROVIDER_FAILURES = [
  PROVIDER_FAILURE_TYPES.unauthorized,
  PROVIDER_FAILURE_TYPES.not_found,
  PROVIDER_FAILURE_TYPES.conflict,
  PROVIDER_FAILURE_TYPES.validation,
  PROVIDER_FAILURE_TYPES.contract_violation,
];

/**
 * A call held back while its courier account is paused (the courier refused the account's key
 * outside the pacing gate, activities/account-pauses.ts): retried after `nextRetryDelay`, never
 * final, so no retry policy may list it.
 */
export const ACCOUNT_PAUSED = 'CourierAccountPaused';

/**
 * A call for a courier account the worker's registry does not have (any more). A delivery's calls
 * retry it (the operator may add the account back); a quote or a start fails with it at once.
 */
export const UNKNOWN_ACCOUNT = 'UnknownAccount';

export const WORKFLOW_FAILURE_TYPES = {
  quoteRejected: 'QuoteRejected',
  quoteNotApproved: 'QuoteApprovalTimedOut',
  currencyMismatch: 'QuoteCurrencyMismatch',
  /** The start's input or workflow ID broke the contract; details[0] lists `{ field, message }` per issue. */
  invalidInput: 'InvalidDeliveryInput',
} as const;

/** Notification webhooks (activities/notify-activities.ts): gone and unknown are final, failed retries on the schedule. */
export const NOTIFY_FAILURE_TYPES = {
  endpointGone: 'NotificationEndpointGone',
  endpointUnknown: 'NotificationEndpointUnknown',
  endpointFailed: 'NotificationEndpointFailed',
} as const;
