/**
 * Histories written under load must replay. Many deliveries at once make the worker record a
 * local activity's marker in one workflow task and run the code after it in the next; a replay
 * resolves that activity a task earlier. Code that depends on the task it runs in (a patched()
 * call after a local activity did) then cannot be replayed: the ended delivery cannot be queried
 * and a restarted worker cannot go on with it. CI caught that once in 317 tests; 40 deliveries at
 * once showed it in 3 of 40 (docs/deploying.md, "Versioning").
 *
 * With RECORD_HISTORIES=<folder>, the histories of that shape are saved for the replay test.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client, Connection, WorkflowHandle } from '@temporalio/client';
import { gateWorkflowId } from '../../contract/workflow-ids';
import { statusQuery } from '../../contract/delivery-messages';
import { type DeliveryWorkflowInput } from '../../contract/delivery-types';
import { deliveryWorkflowId } from '../../contract/workflow-ids';
import { FakeProvider } from '../fixtures/fake-provider-activities';
import { deliveryRequest } from '../fixtures/orders';
import { HISTORIES_DIR, hasLoneMarkerTask, historyJSON, unreplayable } from '../helpers/histories';
import { eventually } from '../helpers/stack';
import { testClient } from '../helpers/temporal';
import { startWorkers, type RunningWorkers } from '../helpers/workers';

const AT_ONCE = 40;
const ROUNDS = 3;

const provider = new FakeProvider();
let client: Client;
let connection: Connection;
let workers: RunningWorkers;
let seq = 0;

beforeAll(async () => {
  ({ client, connection } = await testClient());
  workers = await startWorkers(provider.activities, { prefix: 'load' });
});
afterAll(async () => {
  await workers.stop();
  await connection.close();
});

/** Quoted, created, cancelled as soon as it is followed (the moment the old patch was asked), ended, then read. */
async function cancelledRightAfterCreation(): Promise<{ handle: WorkflowHandle; finalStatus: string }> {
  const reference = `L-${Date.now()}-${++seq}`;
  const { reference_number: _r, ...order } = deliveryRequest({}, 2);
  order.pickup_location = { ...order.pickup_location, comment: `load order ${reference}` };
  const handle = await client.workflow.start('delivery', {
    taskQueue: workers.taskQueue,
    workflowId: deliveryWorkflowId(reference),
    args: [{ reference, order, followUp: { endGraceMs: 0 } } satisfies DeliveryWorkflowInput],
  });
  await eventually(`${handle.workflowId} to follow its delivery`, async () => (await handle.query(statusQuery)).phase === 'following', 60_000);
  await handle.cancel();
  await handle.result().catch(() => undefined);
  // An ended workflow is not cached: the query replays its whole history on the worker.
  const finalStatus = await handle.query(statusQuery).then(
    (s) => s.status ?? 'none',
    async (err: Error) => `query failed: ${err.message} (its history: ${await saveHistory(handle)})`,
  );
  return { handle, finalStatus };
}

/** A history that did not replay, kept for the one who reads the failure (a rare one cannot be made again at will). */
async function saveHistory(handle: WorkflowHandle): Promise<string> {
  const dir = join(tmpdir(), 'unreplayable-histories');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${handle.workflowId.replace(/[^a-zA-Z0-9-]/g, '_')}.json`);
  writeFileSync(file, historyJSON(handle));
  return file;
}

describe('deliveries run many at once', () => {
  it('can all be read once ended, and every history they and the pacing gate wrote replays', async () => {
    const handles: WorkflowHandle[] = [];
    const statuses: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const results = await Promise.all(Array.from({ length: AT_ONCE }, () => cancelledRightAfterCreation()));
      for (const r of results) {
        handles.push(r.handle);
        statuses.push(r.finalStatus);
      }
    }
    // One check of all three: a failed query then shows whether the replayer could replay that history.
    const gate = client.workflow.getHandle(gateWorkflowId(workers.taskQueue));
    expect({
      notReadAsCancelled: statuses.filter((s) => s !== 'CANCELED'),
      notCancelledAtTheProvider: [...provider.deliveries.values()].filter((d) => d.status !== 'CANCELED'),
      unreplayable: await unreplayable([...handles, gate]),
    }).toEqual({ notReadAsCancelled: [], notCancelledAtTheProvider: [], unreplayable: [] });

    if (process.env.RECORD_HISTORIES) {
      const dir = join(HISTORIES_DIR, process.env.RECORD_HISTORIES);
      mkdirSync(dir, { recursive: true });
      const histories = await Promise.all(handles.map(async (h) => ({ workflowId: h.workflowId, history: await h.fetchHistory() })));
      const lone = histories.filter((h) => h.workflowId.startsWith('delivery') && hasLoneMarkerTask(h.history)).slice(0, 3);
      lone.forEach((h, i) => writeFileSync(join(dir, `under-load-marker-alone-in-its-task-${i + 1}.json`), historyJSON(h)));
      console.log(`recorded ${lone.length} histories with a marker alone in its workflow task`);
    }
  }, 300_000);
});
