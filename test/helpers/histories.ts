/**
 * Recorded workflow histories for the replay test (test/temporal/replay.test.ts). Before the first
 * release there is one folder, `baseline`, recorded again (old one deleted) whenever workflow code
 * changes: `RECORD_HISTORIES=baseline npx jest test/temporal/delivery-workflow test/temporal/replay-under-load test/temporal/gate-survival test/temporal/notifications`.
 * Keep the `a-signal-and-a-cancellation-*` files: histories caught once under load (a query made the
 * worker handle a signal apart from the job after it), which no test can make at will.
 * From the first release on, generations are kept (docs/deploying.md, "Versioning").
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import type { WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { testServerAddress } from './temporal';
import { workflowBundle } from './workers';

export const HISTORIES_DIR = join(__dirname, '..', 'histories');

function slug(text: string): string {
  return text.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 90);
}

/** `runId`: that run (a workflow that continued as new); without it, the latest. */
export async function recordHistories(generation: string, testName: string, handles: { workflowId: string; runId?: string }[]): Promise<void> {
  if (!/^[a-z0-9-]+$/.test(generation)) throw new Error('RECORD_HISTORIES must name a folder such as v2-reconciliation');
  const dir = join(HISTORIES_DIR, generation);
  mkdirSync(dir, { recursive: true });
  for (const [i, handle] of handles.entries()) {
    const name = `${slug(testName)}${handles.length > 1 ? `-${i + 1}` : ''}.json`;
    writeFileSync(join(dir, name), historyJSON(handle));
  }
}

/** A run's history as JSON, as the CLI writes it (the JSON the Web UI downloads), which the replayer reads as is. */
export function historyJSON(handle: { workflowId: string; runId?: string }): Buffer {
  const { address, namespace } = testServerAddress();
  return execFileSync(process.env.TEMPORAL_CLI_PATH!, ['workflow', 'show', '--address', address, '--namespace', namespace, '--workflow-id', handle.workflowId, ...(handle.runId ? ['--run-id', handle.runId] : []), '--output', 'json']);
}

export function recordedHistories(): { generation: string; file: string; workflowId: string; history: unknown }[] {
  return readdirSync(HISTORIES_DIR, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort()
    .flatMap((generation) =>
      readdirSync(join(HISTORIES_DIR, generation))
        .filter((f) => f.endsWith('.json'))
        .sort()
        .map((f) => {
          const history = JSON.parse(readFileSync(join(HISTORIES_DIR, generation, f), 'utf8')) as { events?: { workflowExecutionStartedEventAttributes?: { workflowId?: string } }[] };
          // Replayed under the ID it ran with: the delivery workflow checks its ID against its reference.
          const workflowId = history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowId;
          if (!workflowId) throw new Error(`${generation}/${f}: the first event names no workflow ID; record it again`);
          return { generation, file: f, workflowId, history };
        }),
    );
}

/** The workflows whose histories do not replay with today's workflow code, each with the replayer's reason. */
export async function unreplayable(handles: WorkflowHandle[]): Promise<string[]> {
  const histories = await Promise.all(handles.map(async (h) => ({ workflowId: h.workflowId, history: await h.fetchHistory() })));
  const failures: string[] = [];
  for await (const r of Worker.runReplayHistories({ workflowBundle: await workflowBundle() }, histories)) if (r.error) failures.push(`${r.workflowId}: ${r.error.message}`);
  return failures;
}

/**
 * A workflow task whose only command is a local activity's marker: the code after it ran in the
 * next task. On replay, that result can come in one activation with the next task's signals.
 */
export function hasLoneMarkerTask(history: temporal.api.history.v1.IHistory): boolean {
  const { EVENT_TYPE_WORKFLOW_TASK_COMPLETED: completed, EVENT_TYPE_MARKER_RECORDED: marker, EVENT_TYPE_WORKFLOW_TASK_SCHEDULED: scheduled } = temporal.api.enums.v1.EventType;
  const types = (history.events ?? []).map((e) => e.eventType);
  return types.some((t, i) => t === completed && types[i + 1] === marker && types[i + 2] === scheduled);
}
