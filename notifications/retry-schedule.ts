/**
 * When a failed notification webhook is tried again: close to Standard Webhooks' recommendation
 * (immediately, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, …), for up to 3 days in all (the
 * activity's schedule-to-close timeout, workflows/notifier.ts). Temporal does the retrying: the
 * activity's failure carries the delay (nextRetryDelay).
 */

/** Delays before the 2nd, 3rd, … attempt; the last repeats. */
export const DEFAULT_RETRY_SCHEDULE = [5_000, 5 * 60_000, 30 * 60_000, 2 * 3_600_000, 5 * 3_600_000, 10 * 3_600_000];

/** How long a notification is tried in all before it is given up (and its endpoint with it, for that delivery). */
export const NOTIFY_GIVE_UP_AFTER = '3 days';

/** A 429's (or 503's) Retry-After is honoured up to the schedule's longest delay. */
export function retryDelayMs(schedule: readonly number[], failedAttempt: number, retryAfterMs?: number): number {
  const planned = schedule[Math.min(Math.max(failedAttempt, 1), schedule.length) - 1]!;
  if (retryAfterMs === undefined) return planned;
  return Math.min(Math.max(retryAfterMs, 0), Math.max(...schedule));
}

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** `5s,5m,30m,2h` → milliseconds; the error names the variable and the bad entry. */
export function parseSchedule(text: string, variable: string): number[] {
  const out = text.split(',').map((part) => {
    const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)\s*$/.exec(part);
    if (!m) throw new Error(`invalid ${variable}: ${JSON.stringify(part.trim())} must be a number and a unit (ms, s, m, h), e.g. 5s,5m,30m,2h`);
    return Math.round(Number(m[1]) * UNITS[m[2]!]!);
  });
  if (out.some((ms) => ms < 10)) throw new Error(`invalid ${variable}: every delay must be 10 ms or more`);
  return out;
}
