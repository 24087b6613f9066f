/**
 * Messages between delivery workflows and the provider limiter workflows. Signals only: a
 * waiting request is part of the limiter's state (carried across continue-as-new), not an
 * in-flight handler, and a server caps in-flight updates per workflow far below a backlog.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { CallFamily } from '../provider/limits';
import type { LimiterConfig, SlotAnswer, SlotRelease, SlotRequest, SlotWindowSnapshot } from './slot-window';

export interface LimiterInput {
  family: CallFamily;
  config: LimiterConfig;
  /** Set by the limiter itself when it continues as new. */
  resume?: SlotWindowSnapshot;
}

/** A request carries the sender's current limits: a changed configuration takes effect with it. */
export const slotRequestedSignal = defineSignal<[SlotRequest & { config: LimiterConfig }]>('slotRequested');
export const slotReleasedSignal = defineSignal<[SlotRelease]>('slotReleased');
export const slotWithdrawnSignal = defineSignal<[requestId: string]>('slotWithdrawn');
/**
 * Sent by a limiter whose outage probe was just answered to the other families' limiters of its
 * task queue: the provider is back, so they stop waiting out their own probe pauses.
 */
export const providerBackSignal = defineSignal<[{ family: CallFamily }]>('providerBack');
/** Sent by the limiter to the requesting workflow. */
export const slotAnsweredSignal = defineSignal<[SlotAnswer]>('slotAnswered');

export interface LimiterStatus {
  family: CallFamily;
  config: LimiterConfig;
  waiting: number;
  waitingFood: number;
  held: number;
  free: number;
  /** An outage or a 429 paused the family: no slots for this long (then, in an outage, one probe at a time). */
  pausedForMs: number;
  probing: boolean;
  counts: SlotWindowSnapshot['counts'];
}
export const limiterStatusQuery = defineQuery<LimiterStatus>('limiterStatus');

/** The call families whose calls take slots from a limiter workflow (the others use the task-queue limit). */
export const LIMITED_FAMILIES = ['creations', 'quotes'] as const satisfies readonly CallFamily[];

/** One limiter per task queue and call family: a deployment with its own API key has its own queue. */
export function limiterWorkflowId(taskQueue: string, family: CallFamily): string {
  return `provider-limiter:${taskQueue}:${family}`;
}

/** The other limited families' limiters of the same task queue as the limiter `limiterId`. */
export function siblingLimiterIds(limiterId: string): string[] {
  const prefix = limiterId.slice(0, limiterId.lastIndexOf(':') + 1);
  return LIMITED_FAMILIES.map((f) => prefix + f).filter((id) => id !== limiterId);
}

/** Request ids are `<requester workflow id>#<n>`, so any answer finds its way back. */
export function requesterFromId(requestId: string): string {
  return requestId.slice(0, requestId.lastIndexOf('#'));
}
