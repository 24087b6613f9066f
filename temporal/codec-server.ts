/**
 * The codec endpoint the Temporal Web UI calls (`--ui-codec-endpoint`) to show decrypted
 * payloads to an operator: POST /decode and POST /encode with the Temporal codec-server JSON
 * (`{ "payloads": [{ "metadata": { k: base64 }, "data": base64 }] }`). Payloads never leave the
 * operator's browser and this process in clear.
 *
 * Who may use it (it decrypts personal data, so every rule below is enforced, not advised):
 *  - only its own Host names (loopback with its port, plus CODEC_ALLOWED_HOSTS): a DNS-rebinding
 *    page cannot reach it under a name of its own;
 *  - no Origin but the Web UI's (CODEC_ALLOWED_ORIGIN); CORS headers go to that origin only;
 *  - `Content-Type: application/json` only, so no HTML form can post to it;
 *  - the body is capped while it streams in (413 and the connection closed, nothing buffered past
 *    the cap);
 *  - with `DELIVERY_CODEC_TOKEN` set, `Authorization: Bearer <token>` (the Web UI forwards its
 *    user's token when it runs with authentication); bound anywhere but loopback, it refuses to
 *    start without a token.
 * /encode stays: the Web UI encodes through it when an operator starts or signals a workflow
 * with input, and the `temporal` CLI's --codec-endpoint uses both routes. It is behind the same
 * rules as /decode.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { timingSafeEqual } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { z } from 'zod';
import { checkRequest, isLoopbackHost, originsOf, ownHosts, type HttpGuard } from '../provider/http-guard';
import { parseEnv } from '../provider/validation';
import { payloadCodecFromEnv } from './payload-codec';

export const DEFAULT_CODEC_MAX_BODY_BYTES = 8 * 1024 * 1024;
// Proto3 JSON leaves an empty list out: `{}` is no payloads (the CLI sends it for a query without arguments).
const JsonPayloadsSchema = z.object({
  payloads: z.array(z.object({ metadata: z.record(z.string(), z.string()).optional(), data: z.string().optional() })).default([]),
});

export interface CodecServerOptions {
  codec: PayloadCodec;
  /** The Web UI's origin, e.g. http://127.0.0.1:8233. */
  allowedOrigin: string;
  token?: string;
  /** Host names accepted besides loopback (`name` or `name:port`). */
  allowedHosts?: readonly string[];
  maxBodyBytes?: number;
}

export interface CodecServer {
  server: Server;
  /** Rejects when `host` is not loopback and no token is configured. */
  listen(port: number, host?: string): Promise<string>;
  close(): Promise<void>;
}

export function createCodecServer(o: CodecServerOptions): CodecServer {
  const allowedOrigin = o.allowedOrigin.replace(/\/+$/, '');
  const maxBody = o.maxBodyBytes ?? DEFAULT_CODEC_MAX_BODY_BYTES;
  let guard: HttpGuard = { hosts: new Set(), origins: new Set() };

  const server = createServer((req, res) => {
    req.on('error', () => undefined);
    res.on('error', () => undefined);
    const origin = req.headers.origin;
    // CORS only for the Web UI: any other origin gets no header that would let it read.
    const cors: Record<string, string> =
      origin !== undefined && origin.toLowerCase() === allowedOrigin.toLowerCase()
        ? {
            'access-control-allow-origin': allowedOrigin,
            'access-control-allow-methods': 'POST, OPTIONS',
            'access-control-allow-headers': 'content-type, x-namespace, authorization',
            'access-control-allow-credentials': 'true',
          }
        : {};
    const answer = (status: number, body: unknown, close = false) => {
      if (res.headersSent || res.destroyed) return;
      const text = JSON.stringify(body);
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store', vary: 'origin', ...cors, ...(close ? { connection: 'close' } : {}) });
      res.end(text, () => {
        if (close) req.socket.destroy();
      });
    };
    const verdict = checkRequest(req, guard);
    if (!verdict.ok) return answer(verdict.status, { error: verdict.message }, true);
    if (req.method === 'OPTIONS') {
      res.writeHead(204, { ...cors, vary: 'origin' }).end();
      return;
    }
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'POST' || (path !== '/decode' && path !== '/encode')) return answer(404, { error: 'POST /decode or /encode' }, true);
    if (o.token && !bearerMatches(req.headers.authorization, o.token)) return answer(401, { error: 'unauthorized' }, true);
    void readCapped(req, maxBody).then((body) => {
      if (body === 'too_large') return answer(413, { error: `body over ${maxBody} bytes` }, true);
      if (body === 'aborted') return req.socket.destroy();
      void transcode(o.codec, path, body).then(
        (out) => answer(200, out),
        (err: Error) => answer(400, { error: err.message }),
      );
    });
  });
  return {
    server,
    listen: (port, host = '127.0.0.1') =>
      new Promise((resolve, reject) => {
        if (!o.token && !isLoopbackHost(host)) {
          reject(new Error(`the codec endpoint decrypts personal data: bound to ${host} (not loopback) it needs DELIVERY_CODEC_TOKEN`));
          return;
        }
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          const actual = (server.address() as AddressInfo).port;
          const hosts = ownHosts(actual, host, o.allowedHosts);
          guard = { hosts, origins: originsOf([], [allowedOrigin]) };
          resolve(`http://${host.includes(':') ? `[${host}]` : host}:${actual}`);
        });
      }),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function transcode(codec: PayloadCodec, path: string, body: Buffer): Promise<unknown> {
  let parsed;
  try {
    parsed = JsonPayloadsSchema.parse(JSON.parse(body.toString('utf8')));
  } catch {
    throw new Error('expected {"payloads": [...]}');
  }
  const payloads: Payload[] = parsed.payloads.map((p) => ({
    metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
    data: Buffer.from(p.data ?? '', 'base64'),
  }));
  const out = await (path === '/decode' ? codec.decode(payloads) : codec.encode(payloads));
  return {
    payloads: out.map((p) => ({
      metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
      data: Buffer.from(p.data ?? []).toString('base64'),
    })),
  };
}

/** The body, refused by its declared length or as soon as the streamed bytes pass the cap. */
function readCapped(req: IncomingMessage, limit: number): Promise<Buffer | 'too_large' | 'aborted'> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return Promise.resolve('too_large');
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (r: Buffer | 'too_large' | 'aborted') => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('close', onClose);
      if (r === 'too_large') req.pause();
      resolve(r);
    };
    const onData = (c: Buffer) => {
      size += c.length;
      if (size > limit) done('too_large');
      else chunks.push(c);
    };
    const onEnd = () => done(Buffer.concat(chunks, size));
    const onClose = () => done('aborted');
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('close', onClose);
  });
}

function bearerMatches(header: string | undefined, token: string): boolean {
  const offered = Buffer.from(header?.replace(/^Bearer\s+/i, '') ?? '');
  const expected = Buffer.from(token);
  return offered.length === expected.length && timingSafeEqual(offered, expected);
}

const CodecEnvSchema = z.object({
  CODEC_PORT: z.coerce.number().int().min(0).max(65535).default(8234),
  CODEC_HOST: z.string().min(1).default('127.0.0.1'),
  CODEC_ALLOWED_ORIGIN: z.url().default('http://127.0.0.1:8233'),
  DELIVERY_CODEC_TOKEN: z.string().min(16, { message: 'must be at least 16 characters' }).optional(),
  /** Host names accepted besides loopback (`name` or `name:port`, comma-separated), e.g. a compose service name. */
  CODEC_ALLOWED_HOSTS: z.string().default(''),
  CODEC_MAX_BODY_BYTES: z.coerce.number().int().min(1024).max(256 * 1024 * 1024).default(DEFAULT_CODEC_MAX_BODY_BYTES),
});

/** `npm run codec`: the codec endpoint for the local Web UI. */
async function main(): Promise<void> {
  const env = parseEnv(CodecEnvSchema, process.env, 'codec endpoint configuration');
  const codec = payloadCodecFromEnv();
  if (!codec) throw new Error('DELIVERY_PAYLOAD_KEYS is not set: there is nothing to decrypt');
  const server = createCodecServer({
    codec,
    allowedOrigin: env.CODEC_ALLOWED_ORIGIN,
    token: env.DELIVERY_CODEC_TOKEN,
    allowedHosts: env.CODEC_ALLOWED_HOSTS.split(',').map((h) => h.trim()).filter(Boolean),
    maxBodyBytes: env.CODEC_MAX_BODY_BYTES,
  });
  const url = await server.listen(env.CODEC_PORT, env.CODEC_HOST);
  console.log(`codec: listening on ${url} for ${env.CODEC_ALLOWED_ORIGIN}${env.DELIVERY_CODEC_TOKEN ? ' (token required)' : ''}`);
  const stop = () => void server.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

if (require.main === module) {
  main().catch((err: Error) => {
    console.error(`codec: ${err.message}`);
    process.exit(1);
  });
}
