/**
 * Shared fixtures of the simulator's HTTP tests: start a simulator on 127.0.0.1:0, call it with
 * raw HTTP (undici), build valid request bodies, and run a webhook receiver.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { request } from 'undici';
import type { CreateDeliveryRequest } from '../../provider/schemas';
import { createSimulator, type Simulator, type SimulatorOptions } from '../../simulator/server';

export const KEY = 'sandbox-key';

export interface Started {
  sim: Simulator;
  url: string;
  /** Internal errors the simulator reported (expected to stay empty). */
  errors: string[];
}

export async function startSimulator(options: SimulatorOptions = {}): Promise<Started> {
  const errors: string[] = [];
  const sim = createSimulator({ onError: (m) => errors.push(m), ...options });
  const { url } = await sim.listen(0, '127.0.0.1');
  return { sim, url, errors };
}

export interface CallOptions {
  body?: unknown;
  /** Sent verbatim instead of JSON.stringify(body). */
  raw?: string | Buffer | AsyncIterable<Buffer>;
  /** null = no Authorization header. */
  key?: string | null;
  headers?: Record<string, string>;
}

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  json: unknown;
}

export async function call(base: string, method: string, path: string, o: CallOptions = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...o.headers };
  const key = o.key === undefined ? KEY : o.key;
  if (key !== null) headers.authorization = `Bearer ${key}`;
  let body: string | Buffer | Readable | undefined = o.raw === undefined || typeof o.raw === 'string' || Buffer.isBuffer(o.raw) ? o.raw : Readable.from(o.raw);
  if (body === undefined && o.body !== undefined) {
    body = JSON.stringify(o.body);
    headers['content-type'] ??= 'application/json';
  }
  // The control API takes JSON only on state-changing routes, also without a body.
  if (path.startsWith('/_sim') && method !== 'GET') headers['content-type'] ??= 'application/json';
  const res = await request(`${base}${path}`, { method: method as 'GET', headers, body });
  const text = await res.body.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, headers: res.headers as IncomingHttpHeaders, text, json };
}

const inHours = (h: number) => new Date(Date.now() + h * 3_600_000).toISOString();

export function destination(overrides: Partial<CreateDeliveryRequest['destinations'][number]> = {}): CreateDeliveryRequest['destinations'][number] {
  return {
    location: { last_name: 'Doe', company: 'Doe GmbH', phone: '+4915112345678', address: 'Elm Street 2, 10115 Berlin' },
    package_type: 'MEDIUM',
    time_window_start: inHours(2),
    time_window_end: inHours(3),
    ...overrides,
  };
}

export function createBody(overrides: Partial<CreateDeliveryRequest> = {}): CreateDeliveryRequest {
  return {
    desired_pickup_time: inHours(1),
    pickup_location: { last_name: 'Shop', company: 'ACME Foods', address: 'Main Street 1, 10115 Berlin' },
    destinations: [destination()],
    is_food: false,
    ...overrides,
  };
}

export interface ReceivedWebhook {
  headers: Record<string, string>;
  body: string;
}

export interface Receiver {
  url: string;
  received: ReceivedWebhook[];
  close(): Promise<void>;
  /** Resolves once at least `n` requests arrived. */
  waitFor(n: number, timeoutMs?: number): Promise<ReceivedWebhook[]>;
}

/** A webhook receiver answering `status()` to every request. */
export async function startReceiver(status: () => number = () => 204): Promise<Receiver> {
  const received: ReceivedWebhook[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
      received.push({ headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(status()).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
    async waitFor(n, timeoutMs = 5_000) {
      const deadline = Date.now() + timeoutMs;
      while (received.length < n) {
        if (Date.now() > deadline) throw new Error(`expected ${n} webhooks, got ${received.length}`);
        await new Promise((r) => setTimeout(r, 5));
      }
      return received;
    },
  };
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
