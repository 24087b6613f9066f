/**
 * Determinism guard: every recorded history in test/histories/ must replay against the current
 * workflow code. Before the first release there is one baseline, re-recorded when workflow code
 * changes (docs/deploying.md, "Versioning"); from the first release on, a change that would
 * break running workflows fails here.
 */
import { Worker } from '@temporalio/worker';
import { recordedHistories } from '../helpers/histories';
import { workflowBundle } from '../helpers/workers';
import { bundleWorkflows } from '../../worker/worker';

describe('recorded delivery histories', () => {
  const histories = recordedHistories();

  // gate-0-3-0: 0.3.0's gates (AUTO_UPGRADE) replay their run once on this build at the switch, then are pinned here.
  it("are present: one baseline, deliveries and the pacing gate, and 0.3.0's gates", () => {
    expect([...new Set(histories.map((h) => h.generation))]).toEqual(['baseline', 'gate-0-3-0']);
    expect(histories.length).toBeGreaterThanOrEqual(10);
    expect(new Set(histories.map((h) => h.workflowId)).size).toBe(histories.length); // one history per workflow
    expect(histories.some((h) => h.workflowId.includes('pacing-gate'))).toBe(true);
  });

  // A worker with tracing on (workflows/tracing-interceptors.ts) replays the same histories: its
  // interceptors add spans and headers, never a command, and the gate, which upgrades in place,
  // must replay what workers with tracing off recorded.
  it.each([
    ['the current workflow code', () => workflowBundle()],
    ['the current workflow code with tracing on', () => bundleWorkflows(undefined, { tracing: true })],
  ])('all replay with %s', async (_name, bundle) => {
    const failures: string[] = [];
    const replayed: string[] = [];
    const fileOf = new Map(histories.map((h) => [h.workflowId, `${h.generation}/${h.file}`]));
    // The traced bundle's span sink, unused in a replay (the SDK calls no sink while replaying).
    const sinks = { exporter: { export: { fn: () => undefined } } };
    for await (const result of Worker.runReplayHistories({ workflowBundle: await bundle(), sinks }, histories)) {
      replayed.push(result.workflowId);
      if (result.error) failures.push(`${fileOf.get(result.workflowId)} (${result.workflowId}): ${result.error.message}`);
    }
    expect(failures).toEqual([]);
    expect(replayed).toHaveLength(histories.length);
  }, 180_000); // bundling the workflows alone takes most of a minute on a busy 2-core machine
});
