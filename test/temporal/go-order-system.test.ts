/**
 * Issues #18 and #25: the Go order system in examples/go-order-system, built with the Go toolchain
 * and run against a real stack (dev server, workers, simulator with auto-advance, signed webhooks,
 * bridge), payloads encrypted with the same key on both sides. Its order workflow (a Go worker in
 * the same process) starts each delivery as a child workflow and is told every change by signal.
 * `go test` checks its codec against the format's test vectors and its order workflow in Temporal's
 * Go test environment. Without Go on this machine the tests skip with a message.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { AesGcmPayloadCodec, generatePayloadKey, payloadCodecFromEnv } from '../../temporal/payload-codec';
import { startStack, type Stack } from '../helpers/stack';
import { testServerAddress, uniqueTaskQueue } from '../helpers/temporal';

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

/** What the Go order workflow returns (examples/go-order-system/order.go, OrderSummary). */
interface GoOrderSummary {
  reference: string;
  workflowId: string;
  orderWorkflowId: string;
  approved?: boolean;
  quotedAmount?: number;
  status?: string;
  deliveryId?: string;
  destinations?: number;
  trackingLinks?: number;
  cancellation?: string;
  cancelledWorkflow?: boolean;
  outcome: string;
  notifications: number;
  duplicates: number;
  inSequence: boolean;
  types: string[];
  deliveryStatuses: string[];
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

  it('implements the payload codec exactly as the format\'s test vectors say, and its order workflow counts each notification once (`go test`)', async () => {
    const { stdout } = await run('nice', ['-n', '10', go!, 'test', '-count=1', '-v', '.'], { cwd: EXAMPLE, timeout: 600_000 });
    expect(stdout).toMatch(/--- PASS: TestVectorsEncrypt/);
    expect(stdout).toMatch(/--- PASS: TestVectorsDecrypt/);
    // The order workflow in Temporal's Go test environment: a signal sent twice counts once, a gap is seen.
    expect(stdout).toMatch(/--- PASS: TestOrderCountsEachSequenceOnceAndSeesAGap/);
    expect(stdout).toMatch(/--- PASS: TestOrderCancelsItsDeliveryOnceToldItWasCreated/);
    expect(stdout).not.toMatch(/--- FAIL/);
    expect(stdout).toMatch(/^ok\s/m);
  }, 600_000);

  it('runs an order workflow per delivery, told every change by signal (never asking): approves a quote, follows to DELIVERED, cancels a second one', async () => {
    const prefix = `GO-${Date.now().toString(36)}`;
    const { address, namespace } = testServerAddress();
    const { stdout, stderr } = await run(binary, [], {
      env: {
        PATH: process.env.PATH,
        TEMPORAL_ADDRESS: address,
        TEMPORAL_NAMESPACE: namespace,
        DELIVERY_TASK_QUEUE: stack.workers.taskQueue,
        ORDER_TASK_QUEUE: uniqueTaskQueue('go-orders'),
        DELIVERY_PAYLOAD_KEYS: keys,
        ORDER_REFERENCE_PREFIX: prefix,
        // The Go program starts its deliveries itself: no grace after the end (the grace has its own test).
        DELIVERY_END_GRACE_MS: '0',
      },
      timeout: 240_000,
    });
    const summary = JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<'approvedAndDelivered' | 'cancelled', GoOrderSummary> & { temporalCalls: Record<string, number> };
    expect(stderr).toContain('approving');

    // What the Go order workflow was told agrees with the provider's records and the TypeScript client.
    const first = summary.approvedAndDelivered;
    expect(first).toMatchObject({ reference: `${prefix}-1`, workflowId: `delivery:${prefix}-1`, orderWorkflowId: `order:${prefix}-1`, approved: true, status: 'DELIVERED', outcome: 'completed', destinations: 2, trackingLinks: 2 });
    expect(first.deliveryStatuses).toEqual(['CREATED', 'ASSIGNED', 'UPCOMING', 'PICKED_UP', 'DELIVERED']);
    expect(first.types).toContain('quote.awaiting_approval');
    expect(first.types.filter((t) => t === 'destination.tracking_link')).toHaveLength(2);
    const atProvider = stack.sim.deliveries().filter((d) => d.delivery.reference_number === `${prefix}-1`);
    expect(atProvider).toHaveLength(1);
    expect(atProvider[0]!.delivery.id).toBe(first.deliveryId);
    expect(atProvider[0]!.delivery.status).toBe('DELIVERED');
    const result = await stack.deliveries.result(`${prefix}-1`);
    expect(result.quote?.price.amount).toBe(first.quotedAmount);
    expect(result.timeline.some((e) => e.note === 'quote approved')).toBe(true);

    const second = summary.cancelled;
    expect(second).toMatchObject({ reference: `${prefix}-2`, orderWorkflowId: `order:${prefix}-2`, cancelledWorkflow: true, cancellation: 'cancelled', status: 'CANCELED', outcome: 'cancelled' });
    expect(second.deliveryStatuses[0]).toBe('CREATED');
    expect(second.deliveryStatuses.at(-1)).toBe('CANCELED');
    expect(second.types).toContain('cancellation.outcome');
    const cancelledAtProvider = stack.sim.deliveries().filter((d) => d.delivery.reference_number === `${prefix}-2`);
    expect(cancelledAtProvider.map((d) => d.delivery.status)).toEqual(['CANCELED']);

    for (const [n, s] of [first, second].entries()) {
      const reference = `${prefix}-${n + 1}`;
      // Every notification once, sequences 1..N in arrival order, the end last.
      expect(s).toMatchObject({ inSequence: true, duplicates: 0, notifications: s.types.length });
      expect(s.types.at(-1)).toBe('delivery.ended');
      // The delivery's timeline: as many notifications, each sent to its parent, the Go order workflow.
      const told = (await stack.deliveries.getStatus(reference)).timeline.filter((e) => e.notification);
      expect(told.map((e) => e.notification!.sequence)).toEqual(s.types.map((_, i) => i + 1));
      expect(told.every((e) => e.notification!.to[`workflow:order:${reference}`] === 'sent')).toBe(true);
      // Started as a child of the order workflow; the order workflow got one encrypted signal per notification.
      const described = await stack.temporal.workflow.getHandle(`delivery:${reference}`).describe();
      expect(described.parentExecution?.workflowId).toBe(`order:${reference}`);
      const orderHistory = await stack.temporal.workflow.getHandle(`order:${reference}`).fetchHistory();
      const signals = (orderHistory.events ?? []).map((e) => e.workflowExecutionSignaledEventAttributes).filter((a) => a?.signalName === 'deliveryChanged');
      expect(signals).toHaveLength(s.notifications);
      const payload = signals[0]!.input!.payloads![0]!;
      expect(Buffer.from(payload.metadata!.encoding!).toString()).toBe('binary/encrypted');
    }

    // The Go program never asked: no status query, no describe. It sent the approval (an update).
    expect(summary.temporalCalls.QueryWorkflow).toBeUndefined();
    expect(summary.temporalCalls.DescribeWorkflowExecution).toBeUndefined();
    expect(summary.temporalCalls.UpdateWorkflowExecution).toBeGreaterThanOrEqual(1);

    // It wrote ciphertext only: the Go program used the codec.
    const history = await stack.temporal.workflow.getHandle(`delivery:${prefix}-1`).fetchHistory();
    const input = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
    expect(Buffer.from(input!.metadata!.encoding!).toString()).toBe('binary/encrypted');
    expect(Buffer.from(input!.data!).toString('latin1')).not.toContain('Recipient0');
  }, 300_000);
});
