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
/** Sent by the limiter to the requesting workflow. */
export const slotAnsweredSignal = defineSignal<[SlotAnswer]>('slotAnswered');

export interface LimiterStatus {
  family: CallFamily;
  config: LimiterConfig;
  waiting: number;
  waitingFood: number;
  held: number;
  free: number;
  counts: SlotWindowSnapshot['counts'];
}
export const limiterStatusQuery = defineQuery<LimiterStatus>('limiterStatus');

/** One limiter per task queue and call family: a deployment with its own API key has its own queue. */
export function limiterWorkflowId(taskQueue: string, family: CallFamily): string {
  return `provider-limiter:${taskQueue}:${family}`;
}

/** Request ids are `<requester workflow id>#<n>`, so any answer finds its way back. */
export function requesterFromId(requestId: string): string {
  return requestId.slice(0, requestId.lastIndexOf('#'));
}
