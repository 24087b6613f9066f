/**
 * The codec endpoint the Temporal Web UI calls (`--ui-codec-endpoint`) to show decrypted
 * payloads to an operator: POST /decode and POST /encode with the Temporal codec-server JSON
 * (`{ "payloads": [{ "metadata": { k: base64 }, "data": base64 }] }`). Payloads never leave the
 * operator's browser and this process in clear.
 *
 * Who may use it: it binds 127.0.0.1 by default, answers CORS only for the Web UI's origin, and
 * with `DELIVERY_CODEC_TOKEN` set it also requires `Authorization: Bearer <token>` (the Web UI
 * forwards its user's token when it runs with authentication).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { timingSafeEqual } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { z } from 'zod';
import { parseEnv } from '../provider/validation';
import { payloadCodecFromEnv } from './payload-codec';

const MAX_BODY_BYTES = 8 * 1024 * 1024;
const JsonPayloadsSchema = z.object({
  payloads: z.array(z.object({ metadata: z.record(z.string(), z.string()).optional(), data: z.string().optional() })),
});

export interface CodecServerOptions {
  codec: PayloadCodec;
  /** The Web UI's origin, e.g. http://127.0.0.1:8233. */
  allowedOrigin: string;
  token?: string;
}

export function createCodecServer(o: CodecServerOptions): { server: Server; listen(port: number, host?: string): Promise<string>; close(): Promise<void> } {
  const server = createServer((req, res) => {
    const cors = {
      'access-control-allow-origin': o.allowedOrigin,
      'access-control-allow-methods': 'POST, OPTIONS',
      'access-control-allow-headers': 'content-type, x-namespace, authorization',
      'access-control-allow-credentials': 'true',
      vary: 'origin',
    };
    const answer = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json', ...cors });
      res.end(JSON.stringify(body));
    };
    if (req.method === 'OPTIONS') {
      res.writeHead(204, cors).end();
      return;
    }
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'POST' || (path !== '/decode' && path !== '/encode')) return answer(404, { error: 'POST /decode or /encode' });
    if (o.token && !bearerMatches(req.headers.authorization, o.token)) return answer(401, { error: 'unauthorized' });

    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY_BYTES) chunks.push(c);
    });
    req.on('end', () => {
      if (size > MAX_BODY_BYTES) return answer(413, { error: 'body too large' });
      let parsed;
      try {
        parsed = JsonPayloadsSchema.parse(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        return answer(400, { error: 'expected {"payloads": [...]}' });
      }
      const payloads: Payload[] = parsed.payloads.map((p) => ({
        metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
        data: Buffer.from(p.data ?? '', 'base64'),
      }));
      (path === '/decode' ? o.codec.decode(payloads) : o.codec.encode(payloads)).then(
        (out) =>
          answer(200, {
            payloads: out.map((p) => ({
              metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
              data: Buffer.from(p.data ?? []).toString('base64'),
            })),
          }),
        (err: Error) => answer(400, { error: err.message }),
      );
    });
  });
  return {
    server,
    listen: (port, host = '127.0.0.1') =>
      new Promise((resolve) => server.listen(port, host, () => resolve(`http://${host}:${(server.address() as AddressInfo).port}`))),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
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
});

/** `npm run codec`: the codec endpoint for the local Web UI. */
async function main(): Promise<void> {
  const env = parseEnv(CodecEnvSchema, process.env, 'codec endpoint configuration');
  const codec = payloadCodecFromEnv();
  if (!codec) throw new Error('DELIVERY_PAYLOAD_KEYS is not set: there is nothing to decrypt');
  const server = createCodecServer({ codec, allowedOrigin: env.CODEC_ALLOWED_ORIGIN, token: env.DELIVERY_CODEC_TOKEN });
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
