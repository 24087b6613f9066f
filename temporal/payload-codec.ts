/**
 * Personal data encrypted in Temporal. Workflow inputs, results, signals, queries and activity
 * arguments carry recipients' names, phones and addresses; this codec encrypts every payload
 * with AES-256-GCM before it leaves the process, so the server's history stores ciphertext only.
 *
 * The format, precisely enough for another language, with test vectors: docs/payload-encryption.md.
 * Keys come from the environment (`DELIVERY_PAYLOAD_KEYS`: `id:base64key[,id:base64key…]`, the
 * first one encrypts, all of them decrypt, for rotation). Each encrypted payload names its key id
 * in its metadata, so old histories stay readable after a new key is put first.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { METADATA_ENCODING_KEY, type Payload, type PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { z } from 'zod';
import { isLoopbackHost } from '../provider/http-guard';
import { parseEnv } from '../provider/validation';
import { temporalSettingsFromEnv } from './connection';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
const KEY_ID_METADATA = 'encryption-key-id';
const CIPHER_METADATA = 'encryption-cipher';
const CIPHER = 'AES256GCM';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export interface PayloadKey {
  id: string;
  key: Buffer;
}

export class AesGcmPayloadCodec implements PayloadCodec {
  private readonly keys: Map<string, Buffer>;
  private readonly active: PayloadKey;

  private readonly nonce: () => Buffer;

  /**
   * `keys[0]` encrypts; every key decrypts. `nonce` exists for the format's fixed test vectors
   * (docs/payload-encryption.md) only: anything but a fresh random nonce per payload breaks GCM.
   */
  constructor(keys: readonly PayloadKey[], options: { nonce?: () => Buffer } = {}) {
    this.nonce = options.nonce ?? (() => randomBytes(IV_BYTES));
    if (keys.length === 0) throw new Error('the payload codec needs at least one key');
    for (const k of keys) if (k.key.length !== 32) throw new Error(`payload key ${k.id} must be 32 bytes (AES-256), not ${k.key.length}`);
    this.keys = new Map(keys.map((k) => [k.id, k.key]));
    this.active = keys[0]!;
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const iv = this.nonce();
      if (iv.length !== IV_BYTES) throw new Error(`a payload nonce must be ${IV_BYTES} bytes`);
      const cipher = createCipheriv('aes-256-gcm', this.active.key, iv);
      const plain = temporal.api.common.v1.Payload.encode(payload).finish();
      const data = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
      return {
        metadata: {
          [METADATA_ENCODING_KEY]: Buffer.from(ENCRYPTED_ENCODING),
          [KEY_ID_METADATA]: Buffer.from(this.active.id),
          [CIPHER_METADATA]: Buffer.from(CIPHER),
        },
        data,
      };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      if (Buffer.from(payload.metadata?.[METADATA_ENCODING_KEY] ?? []).toString() !== ENCRYPTED_ENCODING) return payload;
      const cipher = payload.metadata?.[CIPHER_METADATA];
      if (cipher !== undefined && cipher !== null && Buffer.from(cipher).toString() !== CIPHER) {
        throw new Error(`encrypted payload uses cipher "${Buffer.from(cipher).toString()}"; only ${CIPHER} is supported`);
      }
      const keyId = Buffer.from(payload.metadata?.[KEY_ID_METADATA] ?? []).toString();
      const key = this.keys.get(keyId);
      if (!key) throw new Error(`no payload key with id "${keyId}" is configured (DELIVERY_PAYLOAD_KEYS has ${[...this.keys.keys()].map((k) => `"${k}"`).join(', ')}); cannot decrypt`);
      const data = Buffer.from(payload.data ?? []);
      if (data.length < IV_BYTES + TAG_BYTES) throw new Error('encrypted payload is too short');
      const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
      decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
      const plain = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
      return temporal.api.common.v1.Payload.decode(plain);
    });
  }
}

export function generatePayloadKey(id = `k${Date.now().toString(36)}`): string {
  return `${id}:${randomBytes(32).toString('base64')}`;
}

const KeyListSchema = z.object({
  DELIVERY_PAYLOAD_KEYS: z
    .string()
    .transform((s) => s.split(/[\s,]+/).filter(Boolean))
    .pipe(
      z
        .array(
          z.string().regex(/^[A-Za-z0-9_.-]{1,64}:[A-Za-z0-9+/]{43}=$/, { message: 'each key must be <id>:<base64 of 32 bytes>, e.g. from `npm run -s payload-key`' }),
        )
        .min(1),
    )
    .optional(),
});

/** Where `npm start` keeps the local stack's key; used when nothing else is configured and Temporal is the local one. */
export const LOCAL_STACK_KEYS_FILE = join(__dirname, '..', '.data', 'payload-keys');

/**
 * Whether the resolved Temporal connection (TEMPORAL_ADDRESS, or TEMPORAL_PROFILE and the config
 * file, through envconfig) is the local stack's: its loopback address and port (TEMPORAL_PORT,
 * 7233 by default), without TLS or API key. A
 * profile pointing at a remote cluster is not, whatever TEMPORAL_ADDRESS says (it is unset).
 */
export function talksToLocalStack(env: NodeJS.ProcessEnv = process.env): boolean {
  let settings;
  try {
    settings = temporalSettingsFromEnv(env);
  } catch {
    return false; // a broken configuration is reported where the connection is made
  }
  const [, host = settings.address, port = '7233'] = /^(.*):(\d+)$/.exec(settings.address) ?? [];
  // The stack's own port too: a test's or benchmark's dev server on another loopback port is not it.
  const stackPort = env.TEMPORAL_PORT ?? '7233';
  return isLoopbackHost(host) && port === stackPort && !settings.connectionOptions.tls && !settings.connectionOptions.apiKey;
}

/**
 * The keys from the environment: DELIVERY_PAYLOAD_KEYS, else the file named by
 * DELIVERY_PAYLOAD_KEYS_FILE (a mounted secret, e.g. in docker-compose), else the local stack's
 * file when Temporal is the local stack.
 */
function configuredKeys(env: NodeJS.ProcessEnv): string | undefined {
  if (env.DELIVERY_PAYLOAD_KEYS) return env.DELIVERY_PAYLOAD_KEYS;
  if (env.DELIVERY_PAYLOAD_KEYS_FILE) {
    try {
      return readFileSync(env.DELIVERY_PAYLOAD_KEYS_FILE, 'utf8').trim();
    } catch (err) {
      throw new Error(`DELIVERY_PAYLOAD_KEYS_FILE: cannot read ${env.DELIVERY_PAYLOAD_KEYS_FILE} (${(err as NodeJS.ErrnoException).code ?? 'error'})`, { cause: err });
    }
  }
  if (existsSync(LOCAL_STACK_KEYS_FILE) && talksToLocalStack(env)) return readFileSync(LOCAL_STACK_KEYS_FILE, 'utf8').trim();
  return undefined;
}

/**
 * The codec configured in the environment; undefined means no encryption. With nothing
 * configured and Temporal the local stack's, the library and CLI use the key `npm start` made
 * for it, if there is one.
 */
export function payloadCodecFromEnv(env: NodeJS.ProcessEnv = process.env): AesGcmPayloadCodec | undefined {
  const { DELIVERY_PAYLOAD_KEYS: keys } = parseEnv(KeyListSchema, { DELIVERY_PAYLOAD_KEYS: configuredKeys(env) }, 'payload encryption configuration');
  if (!keys) return undefined;
  return new AesGcmPayloadCodec(
    keys.map((entry) => {
      const [id, b64] = entry.split(':') as [string, string];
      return { id, key: Buffer.from(b64, 'base64') };
    }),
  );
}

/**
 * Without keys: plain payloads pass, and an encrypted one fails with an error naming its key id
 * (instead of the payload converter's "unknown encoding").
 */
export class NoKeysPayloadCodec implements PayloadCodec {
  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads;
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    for (const payload of payloads) {
      if (Buffer.from(payload.metadata?.[METADATA_ENCODING_KEY] ?? []).toString() !== ENCRYPTED_ENCODING) continue;
      const keyId = Buffer.from(payload.metadata?.[KEY_ID_METADATA] ?? []).toString();
      throw new Error(`this payload is encrypted with payload key "${keyId}", but no payload keys are configured (set DELIVERY_PAYLOAD_KEYS or DELIVERY_PAYLOAD_KEYS_FILE to keys that include "${keyId}")`);
    }
    return payloads;
  }
}

/** The module whose `failureConverter` encodes failure messages and stack traces (temporal/failure-converter.ts). */
export const FAILURE_CONVERTER_PATH = require.resolve('./failure-converter');

/**
 * `dataConverter` option for clients and workers: encryption when keys are configured, failure
 * messages and stack traces included (they may quote personal data).
 */
export function dataConverterFromEnv(env: NodeJS.ProcessEnv = process.env): { payloadCodecs: PayloadCodec[]; failureConverterPath?: string } {
  const codec = payloadCodecFromEnv(env);
  return codec ? { payloadCodecs: [codec], failureConverterPath: FAILURE_CONVERTER_PATH } : { payloadCodecs: [new NoKeysPayloadCodec()] };
}

if (require.main === module) console.log(generatePayloadKey()); // `npm run -s payload-key`
