/**
 * What the bridge answers to a webhook, as a closed vocabulary: an outcome, and a reason code
 * from a fixed list. Metrics label by these two only (never by anything a request carries), so
 * no input can grow the number of time series.
 */
export const WEBHOOK_OUTCOMES = ['accepted', 'duplicate', 'workflow_closed', 'retry_later', 'rejected'] as const;
export type WebhookOutcome = (typeof WEBHOOK_OUTCOMES)[number];

export const REASON_CODES = [
  // delivered, or nothing left to deliver
  'signal_delivered',
  'already_delivered',
  'workflow_closed',
  // rejected: the provider must not retry these (they would fail the same way)
  'method_not_allowed',
  'unsupported_media_type',
  'body_too_large',
  'missing_headers',
  'bad_timestamp',
  'timestamp_out_of_tolerance',
  'no_matching_signature',
  'invalid_json',
  'invalid_event',
  'id_mismatch',
  'aborted',
  // retry later: the provider's retries carry the event over
  'unknown_delivery',
  'no_reference',
  'provider_unavailable',
  'workflow_not_started',
  'temporal_unavailable',
  'internal_error',
  // recorded only (metrics, logs), never answered: the account's secrets could not be read, and
  // the webhook was answered as a bad signature, so no request learns that the account exists
  'secrets_unreadable',
] as const;
export type ReasonCode = (typeof REASON_CODES)[number];

/** A webhook that ends in anything but delivery; its status and code decide the answer. */
export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    readonly code: ReasonCode,
    readonly reason: string,
    readonly extra: Record<string, unknown> = {},
    /** What the operator sees (metrics, logs) when the answer must not say it. */
    readonly recorded: ReasonCode = code,
  ) {
    super(reason);
  }

  get outcome(): WebhookOutcome {
    return this.status >= 500 ? 'retry_later' : 'rejected';
  }
}
