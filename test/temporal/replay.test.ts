/**
 * Determinism guard: every recorded history in test/histories/ must replay against the current
 * workflow code. A change that would break running workflows fails here.
 */
import { Worker } from '@temporalio/worker';
import { recordedHistories } from '../helpers/histories';
import { workflowBundle } from '../helpers/workers';

describe('recorded delivery histories', () => {
  const histories = recordedHistories();

  it('are present, for every generation of the workflow code', () => {
    const generations = new Set(histories.map((h) => h.generation));
    expect([...generations]).toEqual(expect.arrayContaining(['v1-initial', 'v2-reconciliation', 'v3-window-limiter', 'v4-slot-messages-by-activity', 'v5-reconciliation-decided-at-start', 'v6-provider-back-shared']));
    for (const g of generations) expect(histories.filter((h) => h.generation === g).length).toBeGreaterThanOrEqual(10);
  });

  it('all replay with the current workflow code', async () => {
    const failures: string[] = [];
    const replayed: string[] = [];
    for await (const result of Worker.runReplayHistories({ workflowBundle: await workflowBundle() }, histories)) {
      replayed.push(result.workflowId);
      if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
    }
    expect(failures).toEqual([]);
    expect(replayed).toHaveLength(histories.length);
  });
});
