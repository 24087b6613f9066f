/**
 * The delivery workflow's side of the window-exact limiter: ask the family's limiter for a slot,
 * wait for the answer, make exactly one call in it, release it with when the answer came.
 *
 * Why attempts are looped here and not by Temporal's activity retry: every attempt must hold a
 * slot of its own (a retry is a call the provider counts), and a retry policy cannot ask the
 * limiter between attempts. Waits still come from Temporal: the limiter's timers pace the slots,
 * its pause spaces attempts during an outage, and a 429's Retry-After pauses the whole family.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  patched,
  proxyLocalActivities,
  setHandler,
  sleep,
  type SignalDefinition,
  TimeoutFailure,
  workflowInfo,
} from '@temporalio/workflow';
import type { DispatchActivities } from '../activities/dispatch-activities';
import type { CallFamily } from '../provider/limits';
import type { Quote } from '../provider/schemas';
import { NON_RETRYABLE_PROVIDER_FAILURES, PROVIDER_FAILURE_TYPES } from './failures';
import { limiterWorkflowId, slotAnsweredSignal, slotReleasedSignal, slotWithdrawnSignal } from './limiter-messages';
import type { CallOutcome, SlotAnswer } from './slot-window';

const MAX_BACKOFF_MS = 60_000;
const local = proxyLocalActivities<DispatchActivities>({ startToCloseTimeout: '10 seconds' });
/**
 * The slot messages between deliveries and limiters (releases, the limiter's answers) must
 * arrive: a lost release holds its slot until the lease ends, a lost answer leaves its order
 * waiting. Retried every few seconds, with no attempt limit.
 */
export const slotMessages = proxyLocalActivities<DispatchActivities>({ startToCloseTimeout: '10 seconds', retry: { maximumInterval: '5 seconds' } });

export function dispatchSettings() {
  return local.dispatchSettings();
}

export interface SlotCall {
  family: CallFamily;
  food: boolean;
  /** Quotes only: a valid quote for identical inputs is handed over instead of a slot. */
  fingerprint?: string;
  /** Told about each failed attempt, for the timeline. */
  onRetry?: (attempt: number, reason: string) => void;
  /**
   * Creations: once a call may have reached the provider, cancellation waits until the outcome
   * is known (the workflow must learn the delivery's id to cancel it). Before the first call a
   * cancellation simply gives the place in the queue back.
   */
  commitOnCall?: boolean;
}

export type SlotResult<T> = { value: T } | { reused: Quote };

export class ProviderSlots {
  private readonly answers = new Map<string, SlotAnswer>();
  private seq = 0;

  constructor() {
    // Keyed by the request's number alone: the answer reached this workflow by its ID already,
    // and a replay (under another ID) must match it the same way. A repeated answer (the
    // limiter's delivery was retried) is for a number already taken, and never read.
    setHandler(slotAnsweredSignal, (a) => void this.answers.set(requestNumber(a.requestId), a));
  }

  /**
   * Runs `call` in slots until it succeeds or fails for good. `call` gets the attempt number,
   * whether an earlier attempt may have reached the provider, and the slot's time (the activity
   * waits for it: slots are granted up to the lead time ahead).
   */
  async run<T>(c: SlotCall, call: (attempt: number, unclear: boolean, notBefore: number) => Promise<{ value: T; answeredAt: number }>): Promise<SlotResult<T>> {
    const requestedAt = Date.now();
    let unclear = false;
    let unclearFailures = 0;
    let committed = false;
    const guarded = <R>(fn: () => Promise<R>): Promise<R> => (committed ? CancellationScope.nonCancellable(fn) : fn());
    for (let attempt = 1; ; attempt++) {
      const answer = await guarded(() => this.acquire(c, requestedAt));
      if (!answer.slot) return { reused: answer.quote };
      committed ||= c.commitOnCall === true;
      let result: { value: T; answeredAt: number };
      try {
        result = await guarded(() => call(attempt, unclear, answer.notBefore));
      } catch (err) {
        const outcome = outcomeOf(err);
        await this.release(c.family, answer.requestId, { answeredAt: Date.now(), ...outcome });
        if (!outcome.retryable) throw err;
        // Only a 429 proves nothing was created (a 5xx may come after the work); looking costs one read.
        unclear ||= outcome.outcome !== 'rate_limited';
        c.onRetry?.(attempt, ((err as Error).cause as Error | undefined)?.message ?? (err as Error).message);
        // Outages and 429s are paced by the limiter for everyone; any other failure (a timeout,
        // a bug) backs off here, as an activity retry policy would.
        if (outcome.outcome === 'unclear') await guarded(() => sleep(Math.min(MAX_BACKOFF_MS, 1_000 * 2 ** (++unclearFailures - 1))));
        continue;
      }
      await this.release(c.family, answer.requestId, { answeredAt: result.answeredAt, outcome: 'answered', quote: c.fingerprint ? (result.value as Quote) : undefined });
      return { value: result.value };
    }
  }

  private async acquire(c: SlotCall, requestedAt: number): Promise<SlotAnswer> {
    const number = String(++this.seq);
    const requestId = `${workflowInfo().workflowId}#${number}`;
    await local.requestProviderSlot({ family: c.family, taskQueue: workflowInfo().taskQueue, requestId, food: c.food, fingerprint: c.fingerprint, requestedAt });
    try {
      await condition(() => this.answers.has(number));
    } catch (err) {
      // Cancelled while waiting: give the place (or a slot granted meanwhile) back.
      if (isCancellation(err)) await CancellationScope.nonCancellable(() => this.signal(c.family, slotWithdrawnSignal, requestId));
      throw err;
    }
    const answer = this.answers.get(number)!;
    this.answers.delete(number);
    return answer;
  }

  private async release(family: CallFamily, requestId: string, r: { answeredAt: number; outcome: CallOutcome; retryAfterMs?: number; quote?: Quote }): Promise<void> {
    const release = { requestId, answeredAt: r.answeredAt, outcome: r.outcome, retryAfterMs: r.retryAfterMs, quote: r.quote };
    // Workflows that released by signal command before keep doing so (their histories say so).
    await CancellationScope.nonCancellable(() =>
      patched('release-by-activity')
        ? slotMessages.releaseProviderSlot({ family, taskQueue: workflowInfo().taskQueue, release })
        : this.signal(family, slotReleasedSignal, release),
    );
  }

  private async signal<A>(family: CallFamily, def: SignalDefinition<[A]>, arg: A): Promise<void> {
    try {
      await getExternalWorkflowHandle(limiterWorkflowId(workflowInfo().taskQueue, family)).signal(def, arg);
    } catch {
      // The limiter is gone (terminated by an operator): the next request starts a new one, and
      // the lease of this slot there has ended with it.
    }
  }
}

function requestNumber(requestId: string): string {
  return requestId.slice(requestId.lastIndexOf('#') + 1);
}

/** How a failed attempt counts for pacing, and whether another attempt may help. */
function outcomeOf(err: unknown): { outcome: CallOutcome; retryable: boolean; retryAfterMs?: number } {
  if (isCancellation(err)) return { outcome: 'unclear', retryable: false };
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof TimeoutFailure) return { outcome: 'unclear', retryable: true }; // the worker died or hung
  if (!(cause instanceof ApplicationFailure)) return { outcome: 'unclear', retryable: true };
  const retryable = !cause.nonRetryable && !NON_RETRYABLE_PROVIDER_FAILURES.includes(cause.type ?? '');
  switch (cause.type) {
    case PROVIDER_FAILURE_TYPES.rate_limited:
      return { outcome: 'rate_limited', retryable, retryAfterMs: (cause.details?.[0] as { retryAfterMs?: number } | undefined)?.retryAfterMs };
    case PROVIDER_FAILURE_TYPES.unavailable: {
      // A 5xx answer carries its status; no answer at all (refused, timed out) does not.
      const status = (cause.details?.[0] as { status?: number } | undefined)?.status;
      return { outcome: status !== undefined && status >= 500 ? 'unavailable' : 'unreachable', retryable };
    }
    default:
      return { outcome: retryable ? 'unclear' : 'answered', retryable };
  }
}
