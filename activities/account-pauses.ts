/**
 * Courier accounts whose key the courier refuses (401), as this worker process sees it: the one
 * record of an account's pause, kept by every call made with the key (activities/provider-activities.ts:
 * the pacing gate's quotes and creations, and the reads, updates and cancels outside it). A 401
 * on any of them starts the pause (one log line, one count a process), an answer on any ends it.
 * While it lasts, the calls outside the gate pause the Temporal way, each its delivery's activity:
 * one call per UNAUTHORIZED_PROBE_MS goes to the courier (a probe, with the key read anew from the
 * registry), every other fails at once, retryable, its next attempt set to after the next probe;
 * the gate, told of the 401 by its call's failure, holds its queue the same period, one call
 * (its probe) at a time (workflows/gate-state.ts). A corrected key is accepted by the next probe
 * and the other calls follow at their next attempt; a revoked key costs one refused call per
 * period and process, and no delivery fails for it. Pure bookkeeping on the monotonic clock.
 */
import type { MetricMeter } from '@temporalio/common';
import { UNAUTHORIZED_PROBE_MS } from '../workflows/gate-state';

/** The lines of a pause and its end. */
export const PAUSE_LINES = {
  paused: 'courier account paused: the courier refused its API key (401); its deliveries wait, one probe call per period',
  resumed: 'courier account resumed: its API key is accepted again',
} as const;

/** The count of a pause, once a process. `account`: the account's metric label (metrics/account.ts), never a raw id. */
export function countPause(meter: MetricMeter, account: string): void {
  meter.createCounter('delivery_account_unauthorized', 'pauses', 'Times a courier account was paused because the courier refused its API key (401).').add(1, { account });
}

/** A paused call's next attempt comes this long after the probe is due, so the probe has usually been answered by then. */
const AFTER_PROBE_MS = 1_000;

export class AccountPauses {
  /** Paused accounts: since when, and when the next probe may go out. */
  private readonly paused = new Map<string, { since: number; probeAt: number }>();

  constructor(
    private readonly now: () => number = () => performance.now(),
    readonly probeMs = UNAUTHORIZED_PROBE_MS,
  ) {}

  /** Whether a call of the account may go to the courier now (not paused, or the period's probe); when not, the delay before its next attempt. */
  admit(account: string): { retryInMs: number } | undefined {
    const p = this.paused.get(account);
    if (!p) return undefined;
    const t = this.now();
    if (t < p.probeAt) return { retryInMs: Math.ceil(p.probeAt - t) + AFTER_PROBE_MS };
    p.probeAt = t + this.probeMs;
    return undefined;
  }

  /** The courier refused the account's key: `started` the first time (one log line, one count per pause); the delay before this call's next attempt. */
  refused(account: string): { started: boolean; retryInMs: number } {
    const t = this.now();
    const p = this.paused.get(account);
    if (p) p.probeAt = Math.max(p.probeAt, t + this.probeMs);
    else this.paused.set(account, { since: t, probeAt: t + this.probeMs });
    return { started: !p, retryInMs: Math.ceil(this.paused.get(account)!.probeAt - t) };
  }

  /** The courier answered a call made with the account's key: how long the pause lasted, when one ends now. */
  accepted(account: string): number | undefined {
    const p = this.paused.get(account);
    if (!p) return undefined;
    this.paused.delete(account);
    return Math.round(this.now() - p.since);
  }
}
