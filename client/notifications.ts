/**
 * For order systems that receive notifications: a typed parser (the signal's argument, or a
 * webhook's `data`) and a verifier of notification webhooks, the same Standard Webhooks signature
 * check the bridge makes on the provider's webhooks (provider/webhook-signature.ts).
 */
import { DeliveryNotificationSchema } from '../contract/schemas';
import type { DeliveryNotification } from '../contract/delivery-types';
import { fieldIssues } from '../provider/validation';
import { verifyWebhook, type VerifyFailure } from '../provider/webhook-signature';
import { WEBHOOK_TOLERANCE_MS } from '../provider/limits';
import { InvalidInputError } from './delivery-client';

/** A webhook whose signature, timestamp or body does not hold: answer it 400 and keep nothing. */
export class NotificationVerificationError extends Error {
  constructor(readonly reason: VerifyFailure | 'bad_body') {
    super(`notification webhook refused: ${reason}`);
    this.name = 'NotificationVerificationError';
  }
}

/** Checks a notification (a signal's argument or a webhook's `data`) against the contract; throws InvalidInputError naming each field. */
export function parseNotification(value: unknown): DeliveryNotification {
  const parsed = DeliveryNotificationSchema.safeParse(value);
  if (!parsed.success) throw new InvalidInputError('notification', fieldIssues(parsed.error));
  return parsed.data;
}

export interface NotificationWebhook {
  /** The request's headers (node's lower-case names); `webhook-id`, `webhook-timestamp`, `webhook-signature` are read. */
  headers: Record<string, string | string[] | undefined>;
  /** The raw body, exactly as received (the signature covers the bytes). */
  body: Buffer | string;
}

/**
 * Verifies a notification webhook against the endpoint's secrets (any one may match: rotation)
 * and returns its notification. A receiver de-duplicates by `eventId` and orders by `sequence`.
 */
export function verifyNotification(webhook: NotificationWebhook, secrets: readonly string[], { nowMs = Date.now(), toleranceMs = WEBHOOK_TOLERANCE_MS } = {}): DeliveryNotification {
  const header = (name: string) => {
    const v = webhook.headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
  const body = typeof webhook.body === 'string' ? Buffer.from(webhook.body) : webhook.body;
  const verified = verifyWebhook(secrets, { id: header('webhook-id'), timestamp: header('webhook-timestamp'), signature: header('webhook-signature') }, body, nowMs, toleranceMs);
  if (!verified.ok) throw new NotificationVerificationError(verified.reason);
  let envelope: { type?: unknown; data?: unknown };
  try {
    envelope = JSON.parse(body.toString('utf8')) as typeof envelope;
  } catch {
    throw new NotificationVerificationError('bad_body');
  }
  const notification = parseNotification(envelope?.data);
  if (notification.eventId !== header('webhook-id') || notification.type !== envelope.type) throw new NotificationVerificationError('bad_body');
  return notification;
}
