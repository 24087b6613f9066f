/**
 * An order system's HTTP endpoint for notification webhooks, on 127.0.0.1: every request is
 * verified with the independent `standardwebhooks` package; what it answers is up to the test.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import type { DeliveryNotification } from '../../contract/delivery-types';
import { generateWebhookSecret } from '../../provider/webhook-signature';

export interface ReceivedNotification {
  /** The webhook-id header. */
  id: string;
  type: string;
  notification: DeliveryNotification;
  /** The status answered. */
  answered: number;
}

export interface Receiver {
  url: string;
  secret: string;
  /** Every verified request, in arrival order, whatever was answered. */
  requests: ReceivedNotification[];
  /** Requests whose signature did not verify (answered 400). */
  unverified: number;
  /** What to answer a verified request (default 204). */
  answer: (n: DeliveryNotification) => number | { status: number; headers: Record<string, string> };
  /** The notifications answered 2xx, in arrival order. */
  accepted(): DeliveryNotification[];
  close(): Promise<void>;
}

function body(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export async function startReceiver(secret = generateWebhookSecret()): Promise<Receiver> {
  const verifier = new Webhook(secret);
  const receiver: Receiver = {
    url: '',
    secret,
    requests: [],
    unverified: 0,
    answer: () => 204,
    accepted: () => receiver.requests.filter((r) => r.answered >= 200 && r.answered < 300).map((r) => r.notification),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server = createServer((req, res) => {
    void body(req).then((raw) => {
      let envelope: { type: string; data: DeliveryNotification };
      try {
        envelope = verifier.verify(raw.toString('utf8'), req.headers as Record<string, string>) as typeof envelope;
      } catch {
        receiver.unverified++;
        res.writeHead(400).end();
        return;
      }
      const a = receiver.answer(envelope.data);
      const { status, headers } = typeof a === 'number' ? { status: a, headers: {} } : a;
      receiver.requests.push({ id: String(req.headers['webhook-id']), type: envelope.type, notification: envelope.data, answered: status });
      res.writeHead(status, headers).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/delivery`;
  return receiver;
}
