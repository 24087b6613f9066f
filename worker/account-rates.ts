/**
 * Each courier account's own rate on a shared provider-call task queue, kept by the Temporal
 * server: the queue's per-fairness-key rate limit (UpdateTaskQueueConfig, server 1.30+ for the
 * weights). The account is every provider call's fairness key (contract/priorities.ts), so the
 * server dispatches one account's calls at most at the key's rate, scaled by the key's weight:
 * the queue's default rate is PROVIDER_RATE_LIMITS's, and an account whose limit differs gets the
 * weight (its rate / the default). One account's backlog then waits for its own tokens only: the
 * matcher skips a key at its limit and dispatches the next account's task.
 */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { AccountRegistry } from '../accounts/registry';
import type { CallFamily, RateLimit } from '../provider/limits';

/**
 * The server lets a key use this much of its rate at once (matching's `defaultBurstDuration`,
 * not configurable): its limiter lets through floor((span + burst) / interval) + 1 calls in any
 * span, so a window of W holds at most `limit` calls at rate limit / (W + burst + margin).
 */
export const SERVER_KEY_BURST_MS = 1_000;

/**
 * How much later one call may reach the courier after its dispatch than another call of the same
 * key (a worker's poll, the activity's start, the HTTP request): the server times dispatches, the
 * courier counts arrivals. Measured: on this 2-core machine under 8 test runs, 250 ms was not
 * enough (6 calls in a window of 5, test/temporal/account-pacing.test.ts).
 */
export const DISPATCH_SPREAD_MS = 1_000;

/** Calls per second for a key that keeps every rolling window within `limit`, with `marginMs` (PROVIDER_PACING_MARGIN_MS) to spare. */
export function fairnessKeyRate(limit: RateLimit, marginMs: number): number {
  return limit.limit / ((limit.windowMs + SERVER_KEY_BURST_MS + DISPATCH_SPREAD_MS + marginMs) / 1000);
}

/** The server raises any smaller weight to this (matching's `minWeight`): the default rate stays within 1/this of the slowest account's. */
export const SERVER_MIN_WEIGHT = 0.001;

export interface QueueRates {
  /** Calls per second of every fairness key without a weight of its own. */
  defaultRate: number;
  /** Accounts whose rate differs from the default: their weight (rate / default). */
  weights: Record<string, number>;
}

/**
 * The queue's rates for one call family: PROVIDER_RATE_LIMITS's as the default (lowered only
 * when an account's rate is under SERVER_MIN_WEIGHT of it), each account's own limit as its weight.
 */
export function queueRates(family: CallFamily, defaults: Readonly<Record<CallFamily, RateLimit>>, accounts: AccountRegistry | undefined, marginMs: number): QueueRates {
  const rates = new Map<string, number>();
  for (const id of accounts?.ids() ?? []) {
    const limit = accounts!.get(id)?.limits[family];
    if (limit) rates.set(id, fairnessKeyRate(limit, marginMs));
  }
  let defaultRate = fairnessKeyRate(defaults[family], marginMs);
  for (const rate of rates.values()) defaultRate = Math.min(defaultRate, rate / SERVER_MIN_WEIGHT);
  const weights: Record<string, number> = {};
  for (const [id, rate] of rates) {
    // The server keeps weights as float32: a weight that is 1 there needs no override.
    if (Math.fround(rate / defaultRate) !== 1) weights[id] = rate / defaultRate;
  }
  return { defaultRate, weights };
}

export class AccountRatesUnsupported extends Error {}

/**
 * Sets the queue's per-key rate and the accounts' weights, and removes the weights of accounts no
 * longer listed. Throws AccountRatesUnsupported when the server cannot keep them (no
 * UpdateTaskQueueConfig, or weights not kept: a server before 1.30); the default rate may then
 * be set already, which only ever slows a key down.
 */
export async function applyQueueRates(client: Client, taskQueue: string, rates: QueueRates, reason: string): Promise<void> {
  const service = client.workflowService;
  const base = { namespace: client.options.namespace, identity: client.options.identity, taskQueue, taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY };
  let config;
  try {
    ({ config } = await service.updateTaskQueueConfig({
      ...base,
      updateFairnessKeyRateLimitDefault: { rateLimit: { requestsPerSecond: rates.defaultRate }, reason },
      setFairnessWeightOverrides: rates.weights,
    }));
  } catch (err) {
    if ((err as { code?: number }).code === 12 /* UNIMPLEMENTED */) throw new AccountRatesUnsupported(`the Temporal server has no UpdateTaskQueueConfig (${(err as Error).message})`);
    throw err;
  }
  const kept = config?.fairnessWeightOverrides ?? {};
  const missing = Object.keys(rates.weights).filter((id) => kept[id] === undefined);
  if (missing.length > 0) throw new AccountRatesUnsupported(`the Temporal server kept no per-account weight (${missing.length} account(s) with limits of their own, e.g. ${missing[0]}): it needs server 1.30 or newer`);
  const stale = Object.keys(kept).filter((id) => rates.weights[id] === undefined);
  if (stale.length > 0) await service.updateTaskQueueConfig({ ...base, unsetFairnessWeightOverrides: stale });
}

const WHAT: Record<CallFamily, string> = { creations: 'creations', quotes: 'quotes', other: 'reads, updates and cancels' };
const perWindow = (l: RateLimit) => `${l.limit}/${l.windowMs / 1000} s`;

export interface AccountRates {
  /** The families each account has its own rate for; the others share their queue's rate limit. */
  perAccount: ReadonlySet<CallFamily>;
  /** What is paced how, for the worker's start line. */
  summary: string;
  /** Stops following the registry's changes. */
  stop(): void;
}

/**
 * Gives each account its own rate on the queues of `families` (those the pacing gate does not
 * make), and again whenever the registry changes. A family whose rates the server cannot keep is
 * left to its queue's shared rate limit, and the summary says so and why.
 */
export async function startAccountRates(o: {
  client: Client;
  queues: Record<CallFamily, string>;
  families: CallFamily[];
  defaults: Readonly<Record<CallFamily, RateLimit>>;
  accounts?: AccountRegistry;
  marginMs: number;
}): Promise<AccountRates> {
  const reason = 'delivery-orchestrator: each courier account its own limit (worker/account-rates.ts)';
  const apply = (family: CallFamily) => applyQueueRates(o.client, o.queues[family], queueRates(family, o.defaults, o.accounts, o.marginMs), reason);
  const perAccount = new Set<CallFamily>();
  const lines: string[] = [];
  for (const family of o.families) {
    try {
      await apply(family);
      perAccount.add(family);
      const own = Object.keys(queueRates(family, o.defaults, o.accounts, o.marginMs).weights).length;
      lines.push(`${WHAT[family]} paced per account by the Temporal server (${perWindow(o.defaults[family])} each, ${own} account(s) with a limit of their own)`);
    } catch (err) {
      if (!(err instanceof AccountRatesUnsupported)) throw err;
      lines.push(`${WHAT[family]} of all ${o.accounts?.size ?? 1} account(s) share one limit of ${perWindow(o.defaults[family])} on ${o.queues[family]}: ${err.message}`);
    }
  }
  const stop =
    o.accounts?.onChange((change) => {
      if (change instanceof Error) return;
      for (const family of perAccount) apply(family).catch((err: Error) => console.error(`worker: could not set the accounts' ${WHAT[family]} rates on ${o.queues[family]}: ${err.message}`));
    }) ?? (() => undefined);
  return { perAccount, summary: lines.join('; '), stop };
}
