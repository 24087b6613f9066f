/** Messages between delivery workflows and the pacing gate (workflows/gate.ts). Signals only, sent by activities. */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { RateLimit } from '../provider/limits';
import type { CreateDeliveryRequest, DeliveryRecord, Quote } from '../provider/schemas';

/** The call families the gate paces; every other call uses Temporal's task-queue rate limit. */
export const GATED_FAMILIES = ['creations', 'quotes'] as const;
export type GatedFamily = (typeof GATED_FAMILIES)[number];

export interface GateConfig {
  limits: Record<GatedFamily, RateLimit>;
  /** Added to each slot's reuse time (see the clock assumption in docs/operations.md). */
  marginMs: number;
  /** How long one call may take, from its start, lookup included. */
  callTimeoutMs: number;
  /** A slot that frees within this long gets its call scheduled now, to go out when it frees. */
  leadMs: number;
  /** A quote is shared by identical orders only while it has this long left. */
  quoteMinRemainingMs: number;
}

export interface GateRequest {
  /** The asking workflow; for creations also the Idempotency-Key. */
  from: string;
  /** The request's number in that workflow: its answer carries it back. */
  n: number;
  family: GatedFamily;
  food: boolean;
  /** When the order first asked: a request asked again keeps its place. */
  requestedAt: number;
  order: CreateDeliveryRequest;
  /** Quotes: identical orders (same fingerprint) share one quote while it is valid. */
  fingerprint?: string;
}

export type GateAnswer = { n: number } & (
  | { quote: Quote; shared: boolean }
  | { delivery: DeliveryRecord }
  | { failure: { type: string; message: string } }
  /** The gate continued as new without carrying the queue: ask again (the place is kept). */
  | { again: true }
  | { withdrawn: true }
);

export const gateRequestSignal = defineSignal<[GateRequest]>('gateRequest');
export const gateWithdrawSignal = defineSignal<[{ from: string; n: number }]>('gateWithdraw');
/** Sent when a worker starts: its configuration applies from then on. */
export const gateConfigureSignal = defineSignal<[GateConfig]>('gateConfigure');
export const gateAnswerSignal = defineSignal<[GateAnswer]>('gateAnswer');

export interface GateStatus {
  config: GateConfig;
  waiting: number;
  inFlight: number;
  free: Record<GatedFamily, number>;
  pausedForMs: Record<GatedFamily, number>;
  outage: boolean;
  counts: { calls: number; shared: number; retried: number };
}
export const gateStatusQuery = defineQuery<GateStatus>('gateStatus');

/** The type of the failure of a call not sent because it could have ended after its slot. */
export const SLOT_MISSED = 'PacingSlotMissed';

/** One gate per task queue: a deployment with its own API key has its own queue. */
export function gateWorkflowId(taskQueue: string): string {
  return `pacing-gate:${taskQueue}`;
}
