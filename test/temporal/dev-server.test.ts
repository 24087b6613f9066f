/**
 * Proves the provisioned Temporal server works for this project: it is the server version the
 * project names, a worker on it runs a workflow end to end, our search attributes are registered,
 * and task queues have a single partition (so a task-queue rate limit holds in one place).
 */
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import { Worker } from '@temporalio/worker';
import { DELIVERY_SEARCH_ATTRIBUTES } from '../../contract/search-attributes';
import { testClient, testNativeConnection, testServerAddress, uniqueTaskQueue } from '../helpers/temporal';
import { greetingWorkflow } from './fixtures/greeting-workflow';
import { TEMPORAL_SERVER_VERSION } from '../../scripts/cluster/tools';

describe('the Temporal dev server started for the tests', () => {
  it(`is Temporal server ${TEMPORAL_SERVER_VERSION}`, async () => {
    const { connection } = await testClient();
    try {
      const info = await connection.workflowService.getSystemInfo({});
      expect(`v${info.serverVersion}`).toBe(TEMPORAL_SERVER_VERSION);
    } finally {
      await connection.close();
    }
  });

  it('runs a workflow with an activity to completion', async () => {
    const { client, connection } = await testClient();
    const nativeConnection = await testNativeConnection();
    const taskQueue = uniqueTaskQueue('greeting');
    const worker = await Worker.create({
      connection: nativeConnection,
      namespace: testServerAddress().namespace,
      taskQueue,
      workflowsPath: require.resolve('./fixtures/greeting-workflow'),
      activities: { greet: async (name: string) => `hello, ${name}` },
    });
    try {
      const result = await worker.runUntil(
        client.workflow.execute(greetingWorkflow, { taskQueue, workflowId: `greeting-${taskQueue}`, args: ['courier'] }),
      );
      expect(result).toBe('hello, courier');
    } finally {
      await nativeConnection.close();
      await connection.close();
    }
  });

  it('has every delivery search attribute registered with its type', async () => {
    const { connection } = await testClient();
    try {
      const res = await connection.operatorService.listSearchAttributes({ namespace: testServerAddress().namespace });
      const custom = res.customAttributes ?? {};
      for (const key of DELIVERY_SEARCH_ATTRIBUTES) {
        expect({ name: key.name, type: custom[key.name] }).toEqual({ name: key.name, type: encodeSearchAttributeIndexedValueType(key.type) });
      }
    } finally {
      await connection.close();
    }
  });

  it('gives a task queue exactly one partition', async () => {
    const { client, connection } = await testClient();
    try {
      const taskQueue = uniqueTaskQueue('partitions');
      // A started workflow makes the task queue exist; its partitions then show in describe.
      const handle = await client.workflow.start(greetingWorkflow, { taskQueue, workflowId: `partitions-${taskQueue}`, args: ['x'] });
      const res = await connection.workflowService.listTaskQueuePartitions({
        namespace: testServerAddress().namespace,
        taskQueue: { name: taskQueue },
      });
      await handle.terminate('test done');
      // The server's default is 4; rate limits are then enforced per partition.
      expect(res.workflowTaskQueuePartitions).toHaveLength(1);
      expect(res.activityTaskQueuePartitions).toHaveLength(1);
    } finally {
      await connection.close();
    }
  });
});
