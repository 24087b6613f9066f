// notifications/: notification endpoints by name, their retry schedule and the signed HTTP sender.
/**
 * Sends one notification to one endpoint, signed the Standard Webhooks way: `webhook-id` (the
 * notification's event id, the same on every retry), `webhook-timestamp` (this attempt's time),
 * `webhook-signature` (one `v1,` signature per secret), JSON body `{type, timestamp, data}`.
 * No redirect is followed (the configured URL is the only address called) and every attempt ends
 * within 10 s. The answer is classified; retrying is Temporal's (activities/notify-activities.ts).
 */
import { Agent, type Dispatcher } from 'undici';
import type { DeliveryNotification } from '../contract/delivery-types';
import { parseRetryAfter } from '../provider/client';
import { signWebhookWithAll } from '../provider/webhook-signature';
import type { NotifyEndpoint } from './config';

export const NOTIFY_TIMEOUT_MS = 10_000;
/** What a receiver's answer body may hold before it is cut off (it is read only to free the connection). */
const MAX_ANSWER_BYTES = 16 * 1024;

export type SendOutcome =
  | { kind: 'delivered'; status: number }
  /** 410 Gone: the receiver wants no more of this delivery's notifications. */
  | { kind: 'gone'; status: number }
  /** Worth another try: a 429 or 5xx (with its Retry-After, when given), another answer, or no answer. */
  | { kind: 'failed'; status?: number; retryAfterMs?: number; reason: string };

/** The webhook body: Standard Webhooks' `{type, timestamp, data}`. */
export function notificationBody(n: DeliveryNotification): string {
  return JSON.stringify({ type: n.type, timestamp: n.at, data: n });
}

export class NotificationSender {
  private readonly agent: Agent;

  constructor(private readonly timeoutMs = NOTIFY_TIMEOUT_MS) {
    this.agent = new Agent({ connections: 64, keepAliveTimeout: 30_000, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, connect: { timeout: timeoutMs } });
  }

  async send(endpoint: NotifyEndpoint, n: DeliveryNotification, nowMs = Date.now()): Promise<SendOutcome> {
    const body = notificationBody(n);
    const headers = { 'content-type': 'application/json', 'user-agent': 'delivery-orchestrator-notifications', ...signWebhookWithAll(endpoint.secrets, n.eventId, Math.floor(nowMs / 1000), body) };
    let res: Dispatcher.ResponseData;
    try {
      res = await this.agent.request({
        origin: endpoint.url.origin,
        path: endpoint.url.pathname + endpoint.url.search,
        method: 'POST',
        headers,
        body,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err) {
      const code = (err as { code?: string }).code;
      return { kind: 'failed', reason: `no answer (${code ?? (err as Error).name})` };
    }
    await drain(res.body);
    const status = res.statusCode;
    if (status >= 200 && status < 300) return { kind: 'delivered', status };
    if (status === 410) return { kind: 'gone', status };
    const raw = res.headers['retry-after'];
    const retryAfterMs = status === 429 || status === 503 ? parseRetryAfter(Array.isArray(raw) ? raw[0] : raw, nowMs) : undefined;
    return { kind: 'failed', status, retryAfterMs, reason: `answered ${status}` };
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

async function drain(body: Dispatcher.ResponseData['body']): Promise<void> {
  let read = 0;
  try {
    for await (const chunk of body) {
      read += (chunk as Buffer).length;
      if (read > MAX_ANSWER_BYTES) break;
    }
  } catch {
    // the answer's status is what counts
  } finally {
    body.destroy();
  }
}
