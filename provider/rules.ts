/**
 * Contract rules that depend on the current time, kept out of the pure schemas so workflow code
 * can use those. The simulator applies these; the client library applies them before starting.
 */
import type { FieldIssue } from './schemas';

/** Clock skew we forgive between the caller and the provider. */
export const PICKUP_TIME_TOLERANCE_MS = 60_000;

export function pickupTimeIssues(desiredPickupTime: string | undefined, nowMs: number): FieldIssue[] {
  if (desiredPickupTime === undefined) return [];
  const t = Date.parse(desiredPickupTime);
  if (Number.isFinite(t) && t < nowMs - PICKUP_TIME_TOLERANCE_MS) {
    return [{ field: 'desired_pickup_time', message: 'must not be in the past' }];
  }
  return [];
}
