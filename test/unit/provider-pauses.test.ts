/**
 * One pause of a refused key per process, kept by the gate's calls and the others alike
 * (activities/provider-activities.ts): the gate's 401 starts it (one line, one count) and holds
 * the account's other calls; an answer to any call ends it. The provider client is a fake here
 * (unit test); test/temporal/account-trouble.test.ts and processes.test.ts run it for real.
 */
import { ApplicationFailure, ApplicationFailureCategory, type MetricMeter } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { LogLevel, LogMetadata } from '@temporalio/worker';
import { AccountPauses, PAUSE_LINES } from '../../activities/account-pauses';
import { createProviderActivities } from '../../activities/provider-activities';
import { ACCOUNT_PAUSED, PROVIDER_FAILURE_TYPES } from '../../contract/failures';
import { deliveryWorkflowId } from '../../contract/workflow-ids';
import type { ProviderClient } from '../../provider/client';
import { UnauthorizedError } from '../../provider/errors';
import { deliveryRequest } from '../fixtures/orders';

type Line = { level: LogLevel; message: string; meta?: LogMetadata };

function setUp() {
  let t = 1_000;
  let keyRevoked = true;
  const sent: string[] = [];
  const lines: Line[] = [];
  const counts: Record<string, string | number>[] = [];
  const refuse = (call: string) => {
    sent.push(call);
    if (keyRevoked) throw new UnauthorizedError('invalid API key', { status: 401 });
  };
  const provider = {
    quote: async () => (refuse('quote'), { price: { amount: 500, currency: 'EUR' }, expires_at: new Date(Date.now() + 600_000).toISOString() }),
    getDelivery: async () => (refuse('get'), { id: 'd-1' }),
  } as unknown as ProviderClient;
  const pauses = new AccountPauses(() => t, 5_000);
  const activities = createProviderActivities(provider, { pauses });
  const logger = {
    log: (level: LogLevel, message: string, meta?: LogMetadata) => void lines.push({ level, message, meta }),
    trace: () => undefined,
    debug: () => undefined,
    info: (message: string, meta?: LogMetadata) => void lines.push({ level: 'INFO', message, meta }),
    warn: (message: string, meta?: LogMetadata) => void lines.push({ level: 'WARN', message, meta }),
    error: () => undefined,
  };
  const metricMeter = {
    createCounter: (name: string) => ({ add: (n: number, tags: Record<string, string>) => void counts.push({ [name]: n, ...tags }) }),
  } as unknown as MetricMeter;
  const run = <R>(fn: () => Promise<R>) => new MockActivityEnvironment({ workflowExecution: { workflowId: deliveryWorkflowId('P-1', 'shop-b'), runId: 'r' }, taskQueue: 'deliveries' }, { logger, metricMeter }).run(fn);
  return {
    sent,
    lines,
    counts,
    advance: (ms: number) => (t += ms),
    correct: () => (keyRevoked = false),
    quoteInGate: () => run(() => activities.quoteInGate(deliveryRequest(), { delayMs: 0, sendWithinMs: 60_000 })),
    getDelivery: () => run(() => activities.getDelivery('d-1')),
  };
}

const failureOf = (p: Promise<unknown>) => p.then(() => undefined, (err: unknown) => err as ApplicationFailure);

describe("a refused key's one pause per process", () => {
  it("starts at the gate's 401, holds the account's other calls, and is told once", async () => {
    const s = setUp();
    const gated = await failureOf(s.quoteInGate());
    // The gate reads the 401 (it holds its queue); benign, so the SDK does not warn of each probe.
    expect(gated).toBeInstanceOf(ApplicationFailure);
    expect(gated).toMatchObject({ type: PROVIDER_FAILURE_TYPES.unauthorized, category: ApplicationFailureCategory.BENIGN });
    // A read in the same process is held without a call: the pause is the process's, not the gate's alone.
    const held = await failureOf(s.getDelivery());
    expect(held).toMatchObject({ type: ACCOUNT_PAUSED, category: ApplicationFailureCategory.BENIGN, nonRetryable: false });
    expect(s.sent).toEqual(['quote']);
    // The gate's next probe is refused again: still one pause, one line, one count.
    s.advance(5_000);
    await failureOf(s.quoteInGate());
    expect(s.lines.filter((l) => l.message === PAUSE_LINES.paused)).toEqual([{ level: 'WARN', message: PAUSE_LINES.paused, meta: expect.objectContaining({ account: 'shop-b' }) }]);
    expect(s.counts).toEqual([expect.objectContaining({ delivery_account_unauthorized: 1, account: 'shop-b' })]);
  });

  it("ends when any call's answer comes: the gate's accepted probe releases the other calls", async () => {
    const s = setUp();
    await failureOf(s.getDelivery()); // a read starts it this time
    s.correct();
    s.advance(5_000);
    await s.quoteInGate();
    expect(s.lines.map((l) => l.message)).toEqual([PAUSE_LINES.paused, PAUSE_LINES.resumed]);
    await expect(s.getDelivery()).resolves.toEqual({ id: 'd-1' }); // at once, no probe period waited
    expect(s.sent).toEqual(['get', 'quote', 'get']);
  });
});
