/**
 * Issue #18: the Go order system in examples/go-order-system, built with the Go toolchain and
 * run against a real stack (dev server, workers, simulator with auto-advance, signed webhooks,
 * bridge), payloads encrypted with the same key on both sides. Its codec is checked against the
 * format's test vectors with `go test`. Without Go on this machine the tests skip with a message.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { AesGcmPayloadCodec, generatePayloadKey, payloadCodecFromEnv } from '../../temporal/payload-codec';
import { startStack, type Stack } from '../helpers/stack';
import { testServerAddress } from '../helpers/temporal';

const run = promisify(execFile);
const EXAMPLE = join(__dirname, '../../examples/go-order-system');

function findGo(): string | undefined {
  for (const candidate of [process.env.GO, '/usr/local/go/bin/go']) if (candidate && existsSync(candidate)) return candidate;
  try {
    return execFileSync('sh', ['-c', 'command -v go'], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

const go = findGo();
if (!go) console.warn('go-order-system: skipped, no Go toolchain found (set GO, or put go on PATH)');
const describeWithGo = go ? describe : describe.skip;

describeWithGo('the Go order system example', () => {
  const keys = generatePayloadKey('go-e2e');
  const codec = payloadCodecFromEnv({ DELIVERY_PAYLOAD_KEYS: keys }) as AesGcmPayloadCodec;
  let stack: Stack;
  let binary: string;

  beforeAll(async () => {
    // Nice: other work shares this machine. The first build fetches go.temporal.io/sdk from the module proxy.
    binary = join(mkdtempSync(join(tmpdir(), 'go-order-system-')), 'go-order-system');
    await run('nice', ['-n', '10', go!, 'build', '-o', binary, '.'], { cwd: EXAMPLE, timeout: 600_000 });
    // One lifecycle step per delivery every 1.5 s: the cancelled delivery is cancelled long before pickup.
    stack = await startStack({ dataConverter: { payloadCodecs: [codec] }, simulator: { autoAdvanceMs: 1_500 } });
  }, 660_000);
  afterAll(async () => {
    await stack?.stop();
  });

  it('implements the payload codec exactly as the format\'s test vectors say (`go test`)', async () => {
    const { stdout } = await run('nice', ['-n', '10', go!, 'test', '-count=1', '-v', '.'], { cwd: EXAMPLE, timeout: 600_000 });
    expect(stdout).toMatch(/--- PASS: TestVectorsEncrypt/);
    expect(stdout).toMatch(/--- PASS: TestVectorsDecrypt/);
    expect(stdout).not.toMatch(/--- FAIL/);
    expect(stdout).toMatch(/^ok\s/m);
  }, 600_000);

  it('starts a delivery with a maximum price, approves its quote, follows it to DELIVERED, and cancels a second one', async () => {
    const prefix = `GO-${Date.now().toString(36)}`;
    const { address, namespace } = testServerAddress();
    const { stdout, stderr } = await run(binary, [], {
      env: { PATH: process.env.PATH, TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: namespace, DELIVERY_TASK_QUEUE: stack.workers.taskQueue, DELIVERY_PAYLOAD_KEYS: keys, ORDER_REFERENCE_PREFIX: prefix },
      timeout: 240_000,
    });
    const summary = JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<'approvedAndDelivered' | 'cancelled', Record<string, unknown>>;
    expect(stderr).toContain('approving');

    // What the Go program saw agrees with the provider's records and the TypeScript client.
    const first = summary.approvedAndDelivered;
    expect(first).toMatchObject({ reference: `${prefix}-1`, workflowId: `delivery:${prefix}-1`, approved: true, status: 'DELIVERED', destinations: 2, trackingLinks: 2 });
    const atProvider = stack.sim.deliveries().filter((d) => d.delivery.reference_number === `${prefix}-1`);
    expect(atProvider).toHaveLength(1);
    expect(atProvider[0]!.delivery.id).toBe(first.deliveryId);
    expect(atProvider[0]!.delivery.status).toBe('DELIVERED');
    expect((await stack.deliveries.result(`${prefix}-1`)).timeline.some((e) => e.note === 'quote approved')).toBe(true);

    const second = summary.cancelled;
    expect(second).toMatchObject({ reference: `${prefix}-2`, cancelledWorkflow: true, cancellation: 'cancelled', status: 'CANCELED' });
    const cancelledAtProvider = stack.sim.deliveries().filter((d) => d.delivery.reference_number === `${prefix}-2`);
    expect(cancelledAtProvider.map((d) => d.delivery.status)).toEqual(['CANCELED']);

    // It wrote ciphertext only: the Go program used the codec.
    const history = await stack.temporal.workflow.getHandle(`delivery:${prefix}-1`).fetchHistory();
    const input = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
    expect(Buffer.from(input!.metadata!.encoding!).toString()).toBe('binary/encrypted');
    expect(Buffer.from(input!.data!).toString('latin1')).not.toContain('Recipient0');
  }, 300_000);
});
