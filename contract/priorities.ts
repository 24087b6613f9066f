/** The Temporal priority of a delivery's workflow and activity tasks. */
import type { Priority } from '@temporalio/common';

/**
 * Food first, from the first task on: a food delivery's workflow (and so its workflow and
 * activity tasks) carries a higher Temporal priority than others (lower key first; the server's
 * default key is 3 of 5). When a burst of orders backs up in the delivery task queue, food
 * workflows reach the pacing gate first and get the first window's slots, where the gate's own
 * food-first queue order cannot help because nothing is queued there yet. Needs a
 * server with the priority matcher (`matching.useNewMatcher`, docs/deploying.md); a server
 * without it ignores the key.
 */
export function deliveryPriority(isFood: boolean): Priority {
  return { priorityKey: isFood ? 1 : 3 };
}

/**
 * A provider call's priority: food first, and within one priority the courier account as the
 * fairness key, so the server dispatches the accounts' tasks in turn (weighted round-robin) and
 * one account's backlog does not starve another's calls on the shared queue. Needs
 * `matching.enableFairness` (scripts/temporal-dev-server.ts, deploy/temporal-dynamic-config.yaml);
 * a server without it ignores the key.
 */
export function accountPriority(isFood: boolean, account: string): Priority {
  return { ...deliveryPriority(isFood), fairnessKey: account };
}
