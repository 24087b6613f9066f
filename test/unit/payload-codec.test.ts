import { AesGcmPayloadCodec, generatePayloadKey, payloadCodecFromEnv } from '../../client/payload-codec';

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
