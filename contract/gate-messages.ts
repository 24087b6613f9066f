/** Messages between delivery workflows and the pacing gate (workflows/gate.ts). Signals only, sent by activities. */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { CallFamily, RateLimit } from '../provider/limits';
import type { CreateDeliveryRequest, DeliveryRecord, Price, Quote } from '../provider/schemas';
import type { StatusSearch } from './search-attributes';

/** The call families the gate paces; every other call uses Temporal's task-queue rate limit. */
export const GATED_FAMILIES = ['creations', 'quotes'] as const;
export type GatedFamily = (typeof GATED_FAMILIES)[number];

/** As the PROVIDER_PACING_* settings say (worker/pacing-config.ts). */
export interface GateConfig {
  limits: Record<GatedFamily, RateLimit>;
  marginMs: number;
  callTimeoutMs: number;
  leadMs: number;
  quoteMinRemainingMs: number;
  /** The gate continues as new at this many events, or sooner when Temporal suggests it. */
  historyLimit: number;
}

/** The worker's pacing settings (read from the environment by worker/pacing-config.ts), recorded in each delivery's history. */
export interface PacingSettings {
  pacing: 'gate' | 'task-queue';
  limits: Record<CallFamily, RateLimit>;
  marginMs: number;
  callTimeoutMs: number;
  quoteMinRemainingMs: number;
  leadMs: number;
  gateHistoryLimit: number;
  /**
   * Not pacing, but read by a delivery in the same local activity, so once: when it upserts
   * DeliveryStatus (DELIVERY_STATUS_SEARCH). Absent in the histories of workers before it: `every`.
   */
  statusSearch?: StatusSearch;
}

/**
 * `from`: the asking workflow (for creations also the Idempotency-Key); `n`: the request's number
 * there, which its answer carries back; `requestedAt`: when the order first asked (asked again, it
 * keeps its place); `fingerprint` (quotes): identical orders share one quote while it is valid;
 * `unclear`: an earlier attempt may have reached the provider (a creation then looks first);
 * `create` (quotes): create right after the quote when it is within `maxPrice` (same currency),
 * answering both at once, so the order does not have to ask again; with `answerOnce`, a creation
 * that goes out at once is answered by the delivery's answer alone (it carries the quote): the
 * quote is told first only to an order whose creation waits for a slot (one signal fewer per order).
 */
export interface GateRequest {
  from: string;
  n: number;
  family: GatedFamily;
  food: boolean;
  requestedAt: number;
  order: CreateDeliveryRequest;
  fingerprint?: string;
  unclear?: boolean;
  create?: { maxPrice?: Price; answerOnce?: true };
  /** The asking delivery's W3C traceparent when tracing is on: the gate's call for it joins that trace (workflows/trace-context.ts). */
  trace?: string;
  /**
   * The gate's account's limits as the asking worker's registry says at the ask: the gate paces by
   * the latest it was given (docs/architecture.md, "Limits always current"). Absent from asks of
   * builds before it: the gate keeps its limits.
   */
  limits?: Record<GatedFamily, RateLimit>;
  /**
   * All the gate's settings as the asking worker has them (its limits as `limits`): a worker
   * started with new settings changes a running gate by its first ask, whichever the account.
   * Absent from asks of builds before it; `limits` stays for gates of those builds.
   */
  config?: GateConfig;
}

export type GateAnswer = { n: number } & (
  /** `creating`: the gate creates next (a quote asked with `create`), and its answer follows. */
  | { quote: Quote; shared: boolean; creating?: true }
  | { delivery: DeliveryRecord; quote?: Quote; shared?: true } // `quote`: the quote asked for with `create`; `shared`: an identical order's
  | { failure: { type: string; message: string } }
  /**
   * The gate continues as new without carrying the queue: ask again (the place is kept, and whether
   * an attempt may have reached the provider) once run `run`, the one draining, has ended.
   */
  | { again: true; unclear: boolean; quote?: Quote; run: string } // `quote`: already quoted, for a creation asked with `create`
  | { withdrawn: true }
);

/**
 * What the gate gives its creation call (activities/provider-activities.ts createInGate): the
 * answer for the asking workflow, which the activity sends itself once the delivery exists, so
 * that no answer activity follows. The activity says whether it did (`told`); a worker that does
 * not know this argument returns the record alone, and the gate answers as before.
 */
export interface CreationTell {
  workflowId: string;
  answer: { n: number; quote?: Quote; shared?: true };
}

/** The asks of one worker process, sent together (activities/batched-sends.ts says why). */
export const gateRequestSignal = defineSignal<[GateRequest[]]>('gateRequest');
export const gateWithdrawSignal = defineSignal<[{ from: string; n: number }]>('gateWithdraw');
/** Sent when a worker starts: its configuration applies from then on. */
export const gateConfigureSignal = defineSignal<[GateConfig]>('gateConfigure');
export const gateAnswerSignal = defineSignal<[GateAnswer]>('gateAnswer');
/**
 * Sent, with no argument, to every gate pinned to another version once a version is made current
 * (temporal/worker-deployment.ts): an idle gate runs no task by itself, and only in a task does it
 * see that its version is no longer the target and move (workflows/gate.ts).
 */
export const gateWakeSignal = defineSignal('gateWake');
/** The gate's workflow type (workflows/gate.ts), for the listings that find every gate. */
export const GATE_WORKFLOW_TYPE = 'pacingGate';

/** A gate addresses each answer to the asking workflow. */
export type Addressed = { to: string; answer: GateAnswer };

/** What the gate's status query answers (GateState.status in workflows/gate-state.ts). */
export interface GateStatus {
  config: GateConfig;
  waiting: number;
  inFlight: number;
  free: Record<GatedFamily, number>;
  pausedForMs: Record<GatedFamily, number>;
  outage: boolean;
  counts: { calls: number; shared: number; retried: number };
  /** Requests waiting per family, and how long the oldest of each has waited (absent from gates before them). */
  waitingByFamily?: Record<GatedFamily, number>;
  oldestWaitMs?: Record<GatedFamily, number>;
}

export const gateStatusQuery = defineQuery<GateStatus>('gateStatus');

/** The type of the failure of a call not sent because it could have ended after its slot. */
export const SLOT_MISSED = 'PacingSlotMissed';
