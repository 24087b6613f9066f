import { createDecipheriv } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { AesGcmPayloadCodec, dataConverterFromEnv, generatePayloadKey, NoKeysPayloadCodec, payloadCodecFromEnv, talksToLocalStack } from '../../temporal/payload-codec';

const json = (text: string) => ({ metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from(JSON.stringify(text)) });

describe('the AES-256-GCM payload codec', () => {
  it('round-trips payloads and hides their content', async () => {
    const codec = payloadCodecFromEnv({ DELIVERY_PAYLOAD_KEYS: generatePayloadKey('a') })!;
    const [enc] = await codec.encode([json('Erika Mustermann, +4915112345678')]);
    expect(Buffer.from(enc!.data!).toString('latin1')).not.toContain('Mustermann');
    expect(Buffer.from(enc!.metadata!['encryption-key-id']!).toString()).toBe('a');
    const [dec] = await codec.decode([enc!]);
    expect(Buffer.from(dec!.data!).toString()).toBe(JSON.stringify('Erika Mustermann, +4915112345678'));
  });

  it('uses a fresh IV each time', async () => {
    const codec = payloadCodecFromEnv({ DELIVERY_PAYLOAD_KEYS: generatePayloadKey('a') })!;
    const [x, y] = await codec.encode([json('same'), json('same')]);
    expect(Buffer.from(x!.data!).equals(Buffer.from(y!.data!))).toBe(false);
  });

  it('decrypts with an older key after rotation and encrypts with the first', async () => {
    const oldKey = generatePayloadKey('old');
    const before = payloadCodecFromEnv({ DELIVERY_PAYLOAD_KEYS: oldKey })!;
    const [written] = await before.encode([json('kept')]);
    const after = payloadCodecFromEnv({ DELIVERY_PAYLOAD_KEYS: `${generatePayloadKey('new')},${oldKey}` })!;
    expect(Buffer.from((await after.decode([written!]))[0]!.data!).toString()).toBe('"kept"');
    expect(Buffer.from((await after.encode([json('x')]))[0]!.metadata!['encryption-key-id']!).toString()).toBe('new');
  });

  it('refuses a tampered payload', async () => {
    const codec = payloadCodecFromEnv({ DELIVERY_PAYLOAD_KEYS: generatePayloadKey('a') })!;
    const [enc] = await codec.encode([json('x')]);
    const data = Buffer.from(enc!.data!);
    data[20] = data[20]! ^ 1;
    await expect(codec.decode([{ ...enc!, data }])).rejects.toThrow();
  });

  it('passes through payloads that were never encrypted', async () => {
    const codec = new AesGcmPayloadCodec([{ id: 'a', key: Buffer.alloc(32, 1) }]);
    const plain = json('no secrets');
    expect(await codec.decode([plain])).toEqual([plain]);
  });

  it('names the variable and the rule for a bad key, without echoing it', () => {
    expect(() => payloadCodecFromEnv({ DELIVERY_PAYLOAD_KEYS: 'a:c2hvcnQ=' })).toThrow(/DELIVERY_PAYLOAD_KEYS\[0\]: each key must be <id>:<base64 of 32 bytes>/);
    expect(() => payloadCodecFromEnv({ DELIVERY_PAYLOAD_KEYS: 'a:c2hvcnQ=' })).not.toThrow(/c2hvcnQ/);
    expect(payloadCodecFromEnv({ TEMPORAL_ADDRESS: 'somewhere:7233' })).toBeUndefined();
  });
});

describe('which payload keys a process uses', () => {
  const dir = mkdtempSync(join(tmpdir(), 'payload-keys-'));
  const config = join(dir, 'temporal.toml');
  writeFileSync(config, ['[profile.cloud]', 'address = "prod.a1b2c.tmprl.cloud:7233"', 'namespace = "prod.a1b2c"', 'api_key = "cloud-api-key"', '', '[profile.local]', 'address = "127.0.0.1:7233"', ''].join('\n'));

  it("uses the local stack's key only when the resolved Temporal is the local stack", () => {
    expect(talksToLocalStack({})).toBe(true);
    expect(talksToLocalStack({ TEMPORAL_ADDRESS: 'localhost:7233' })).toBe(true);
    expect(talksToLocalStack({ TEMPORAL_CONFIG_FILE: config, TEMPORAL_PROFILE: 'local' })).toBe(true);
    // The case: TEMPORAL_ADDRESS unset, a profile pointing at a remote cluster.
    expect(talksToLocalStack({ TEMPORAL_CONFIG_FILE: config, TEMPORAL_PROFILE: 'cloud' })).toBe(false);
    expect(talksToLocalStack({ TEMPORAL_ADDRESS: 'temporal.internal:7233' })).toBe(false);
    // A test's or benchmark's own dev server on another loopback port is not the local stack.
    expect(talksToLocalStack({ TEMPORAL_ADDRESS: '127.0.0.1:43781' })).toBe(false);
    expect(talksToLocalStack({ TEMPORAL_ADDRESS: '127.0.0.1:7300', TEMPORAL_PORT: '7300' })).toBe(true);
    expect(talksToLocalStack({ TEMPORAL_ADDRESS: '127.0.0.1:7233', TEMPORAL_API_KEY: 'k' })).toBe(false);
  });

  it('reads keys from DELIVERY_PAYLOAD_KEYS_FILE (a mounted secret), naming the file when it cannot', async () => {
    const file = join(dir, 'keys');
    writeFileSync(file, `${generatePayloadKey('mounted')}\n`);
    const codec = payloadCodecFromEnv({ DELIVERY_PAYLOAD_KEYS_FILE: file, TEMPORAL_ADDRESS: 'temporal:7233' })!;
    const [encrypted] = await codec.encode([json('x')]);
    expect(Buffer.from(encrypted!.metadata!['encryption-key-id']!).toString()).toBe('mounted');
    expect(() => payloadCodecFromEnv({ DELIVERY_PAYLOAD_KEYS_FILE: join(dir, 'missing') })).toThrow(/DELIVERY_PAYLOAD_KEYS_FILE: cannot read .*missing \(ENOENT\)/);
  });

  it('names the missing key id when a process without keys, or with other keys, meets an encrypted payload', async () => {
    const [encrypted] = await payloadCodecFromEnv({ DELIVERY_PAYLOAD_KEYS: generatePayloadKey('local') })!.encode([json('Zwetschgenbaum')]);
    const none = dataConverterFromEnv({ TEMPORAL_ADDRESS: 'temporal.internal:7233' });
    expect(none.payloadCodecs[0]).toBeInstanceOf(NoKeysPayloadCodec);
    await expect(none.payloadCodecs[0]!.decode([encrypted!])).rejects.toThrow(/encrypted with payload key "local", but no payload keys are configured/);
    expect(await none.payloadCodecs[0]!.decode([json('plain')])).toEqual([json('plain')]);
    const other = payloadCodecFromEnv({ DELIVERY_PAYLOAD_KEYS: generatePayloadKey('k2') })!;
    await expect(other.decode([encrypted!])).rejects.toThrow(/no payload key with id "local" is configured \(DELIVERY_PAYLOAD_KEYS has "k2"\)/);
  });
});

/** docs/payload-encryption-vectors.json: the format's fixed vectors, shared with examples/go-order-system. */
interface Vectors {
  keys: { id: string; key_hex: string; key_base64: string }[];
  vectors: {
    name: string;
    key_id: string;
    nonce_hex: string;
    payload: { metadata: Record<string, string>; data_utf8: string };
    plaintext_hex: string;
    encrypted: { metadata: Record<string, string>; data_hex: string };
  }[];
  must_fail: { name: string; encrypted: { metadata: Record<string, string>; data_hex: string } }[];
}

describe('the payload encryption format (docs/payload-encryption.md)', () => {
  const doc = JSON.parse(readFileSync(join(__dirname, '../../docs/payload-encryption-vectors.json'), 'utf8')) as Vectors;
  const keys = doc.keys.map((k) => ({ id: k.id, key: Buffer.from(k.key_hex, 'hex') }));
  const toPayload = (p: { metadata: Record<string, string>; data_hex?: string; data_utf8?: string }) => ({
    metadata: Object.fromEntries(Object.entries(p.metadata).map(([k, v]) => [k, Buffer.from(v)])),
    data: p.data_hex !== undefined ? Buffer.from(p.data_hex, 'hex') : Buffer.from(p.data_utf8 ?? ''),
  });
  const text = (p: Payload) => ({
    metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v!).toString()])),
    data: Buffer.from(p.data ?? []).toString('hex'),
  });

  it('has vectors for several keys, an empty payload and non-ASCII data, and keys written both ways', () => {
    expect(doc.vectors.length).toBeGreaterThanOrEqual(4);
    expect(new Set(doc.vectors.map((v) => v.key_id)).size).toBe(2);
    for (const k of doc.keys) expect(Buffer.from(k.key_base64, 'base64').toString('hex')).toBe(k.key_hex);
  });

  it.each(doc.vectors.map((v) => [v.name, v] as const))('encrypts %s to the vector exactly, with a fixed nonce', async (_name, v) => {
    const active = keys.find((k) => k.id === v.key_id)!;
    const codec = new AesGcmPayloadCodec([active, ...keys.filter((k) => k !== active)], { nonce: () => Buffer.from(v.nonce_hex, 'hex') });
    const [encrypted] = await codec.encode([toPayload(v.payload)]);
    expect(text(encrypted!)).toEqual({ metadata: v.encrypted.metadata, data: v.encrypted.data_hex });
    // The plaintext is the payload's protobuf encoding (temporal.api.common.v1.Payload).
    expect(Buffer.from(temporal.api.common.v1.Payload.encode(toPayload(v.payload)).finish()).toString('hex')).toBe(v.plaintext_hex);
  });

  it.each(doc.vectors.map((v) => [v.name, v] as const))('decrypts %s with every key configured, and with plain AES-256-GCM', async (_name, v) => {
    const codec = new AesGcmPayloadCodec(keys);
    const [decoded] = await codec.decode([toPayload(v.encrypted)]);
    expect(text(decoded!)).toEqual(text(toPayload(v.payload)));
    // Independently of the codec: nonce (12) || ciphertext || tag (16), no additional data.
    const data = Buffer.from(v.encrypted.data_hex, 'hex');
    const decipher = createDecipheriv('aes-256-gcm', keys.find((k) => k.id === v.key_id)!.key, data.subarray(0, 12));
    decipher.setAuthTag(data.subarray(data.length - 16));
    const plain = Buffer.concat([decipher.update(data.subarray(12, data.length - 16)), decipher.final()]);
    expect(plain.toString('hex')).toBe(v.plaintext_hex);
  });

  it.each(doc.must_fail.map((v) => [v.name, v] as const))('refuses %s', async (_name, v) => {
    await expect(new AesGcmPayloadCodec(keys).decode([toPayload(v.encrypted)])).rejects.toThrow();
  });
});
