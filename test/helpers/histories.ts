/**
 * Recorded workflow histories for the replay test (test/temporal/replay.test.ts). Record them
 * again with `RECORD_HISTORIES=1 npx jest test/temporal/delivery-workflow` only when a change
 * is meant to be incompatible and is versioned; otherwise the old histories must keep replaying.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import type { WorkflowHandle } from '@temporalio/client';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import type { History } from '@temporalio/common/lib/proto-utils';
import { testServerAddress } from './temporal';

export const HISTORIES_DIR = join(__dirname, '..', 'histories');

function slug(text: string): string {
  return text.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 90);
}

export async function recordHistories(testName: string, handles: WorkflowHandle[]): Promise<void> {
  mkdirSync(HISTORIES_DIR, { recursive: true });
  for (const [i, handle] of handles.entries()) {
    // The CLI writes the same JSON the Web UI downloads, which historyFromJSON reads back.
    const { address, namespace } = testServerAddress();
    const json = execFileSync(process.env.TEMPORAL_CLI_PATH!, ['workflow', 'show', '--address', address, '--namespace', namespace, '--workflow-id', handle.workflowId, '--output', 'json']);
    const name = `${slug(testName)}${handles.length > 1 ? `-${i + 1}` : ''}.json`;
    writeFileSync(join(HISTORIES_DIR, name), json);
  }
}

export function recordedHistories(): { workflowId: string; history: History }[] {
  return readdirSync(HISTORIES_DIR)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => ({ workflowId: f.replace(/\.json$/, ''), history: historyFromJSON(JSON.parse(readFileSync(join(HISTORIES_DIR, f), 'utf8'))) }));
}
