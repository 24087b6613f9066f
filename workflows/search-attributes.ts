/**
 * The delivery's search attributes, upserted once per workflow task with everything that changed
 * in it (Temporal Cloud bills each upsert command as an action; a creation changes three at once).
 * The flush is a microtask: it runs after this task's handlers and before the task's commands are
 * sent, the same way on every replay.
 */
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { upsertSearchAttributes } from '@temporalio/workflow';

export function batchedUpserts(): (pair: SearchAttributeUpdatePair) => void {
  const pending = new Map<string, SearchAttributeUpdatePair>();
  const flush = () => {
    const pairs = [...pending.values()];
    pending.clear();
    upsertSearchAttributes(pairs);
  };
  return (pair) => {
    if (pending.size === 0) void Promise.resolve().then(flush);
    pending.set(pair.key.name, pair);
  };
}
