/**
 * Determinism guard: every recorded history in test/histories/ must replay against the current
 * workflow code. Before the first release there is one baseline, re-recorded when workflow code
 * changes (docs/deploying.md, "Versioning"); from the first release on, a change that would
 * break running workflows fails here.
 */
import { Worker } from '@temporalio/worker';
import { recordedHistories } from '../helpers/histories';
import { workflowBundle } from '../helpers/workers';

describe('recorded delivery histories', () => {
  const histories = recordedHistories();

  it('are present: one baseline, deliveries and the pacing gate', () => {
    expect([...new Set(histories.map((h) => h.generation))]).toEqual(['baseline']);
    expect(histories.length).toBeGreaterThanOrEqual(10);
    expect(new Set(histories.map((h) => h.workflowId)).size).toBe(histories.length); // one history per workflow
    expect(histories.some((h) => h.workflowId.includes('pacing-gate'))).toBe(true);
  });

  it('all replay with the current workflow code', async () => {
    const failures: string[] = [];
    const replayed: string[] = [];
    const fileOf = new Map(histories.map((h) => [h.workflowId, `${h.generation}/${h.file}`]));
    for await (const result of Worker.runReplayHistories({ workflowBundle: await workflowBundle() }, histories)) {
      replayed.push(result.workflowId);
      if (result.error) failures.push(`${fileOf.get(result.workflowId)} (${result.workflowId}): ${result.error.message}`);
    }
    expect(failures).toEqual([]);
    expect(replayed).toHaveLength(histories.length);
  }, 180_000); // bundling the workflows alone takes most of a minute on a busy 2-core machine
});
