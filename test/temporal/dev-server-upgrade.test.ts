/**
 * The upgrade of `npm start`'s data: a SQLite file written by the Temporal CLI v1.5.1's dev server
 * (server 1.29.1, what `npm start` ran before), with a workflow open on it, is opened by this
 * project's dev server (scripts/dev-server-data.ts upgrades it first): the workflow is found by
 * its search attribute and runs to its end, and the old file is kept beside the new one.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { DELIVERY_SEARCH_ATTRIBUTES, OrderReference } from '../../contract/search-attributes';
import { cliType } from '../../scripts/cluster/temporal-cluster';
import { ensureServerTools, TEMPORAL_SERVER_VERSION } from '../../scripts/cluster/tools';
import { versionFile } from '../../scripts/dev-server-data';
import { freePort, startDevServer, stopProcess, type DevServer } from '../../scripts/temporal-dev-server';
import { connectClient } from '../../temporal/client-connection';
import { uniqueTaskQueue } from '../helpers/temporal';
import { greetingWorkflow } from './fixtures/greeting-workflow';

const dir = mkdtempSync(join(tmpdir(), 'dev-server-upgrade-'));
const dbFilename = join(dir, 'temporal.db');
let server: DevServer | undefined;

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** The CLI v1.5.1's dev server on `dbFilename` with the project's search attributes, as `npm start` ran it. */
async function startOldDevServer(): Promise<{ address: string; stop(): Promise<void> }> {
  const cli = process.env.TEMPORAL_CLI_PATH;
  if (!cli) throw new Error('TEMPORAL_CLI_PATH is not set: run this test through jest (the `temporal` project sets it)');
  const port = await freePort();
  const attributes = DELIVERY_SEARCH_ATTRIBUTES.flatMap((k) => ['--search-attribute', `${k.name}=${cliType(k.type)}`]);
  const child = spawn(cli, ['server', 'start-dev', '--headless', '--ip', '127.0.0.1', '--port', String(port), '--db-filename', dbFilename, '--log-level', 'error', ...attributes], { stdio: 'ignore' });
  const address = `127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    const connection = await connectClient({ address, connectTimeout: 1_000 }).catch(() => undefined);
    const info = await connection?.workflowService.getSystemInfo({}).catch(() => undefined);
    await connection?.close();
    if (info) {
      expect(info.serverVersion).toBe('1.29.1');
      return { address, stop: () => stopProcess(child) };
    }
    if (Date.now() > deadline) throw new Error('the CLI v1.5.1 dev server did not answer within 60 s');
    await new Promise((r) => setTimeout(r, 250));
  }
}

it(`a workflow open on the CLI v1.5.1's dev server (server 1.29.1) is found and runs to its end on server ${TEMPORAL_SERVER_VERSION}, the old file kept`, async () => {
  const taskQueue = uniqueTaskQueue('upgrade');
  const workflowId = `upgrade-${taskQueue}`;
  const old = await startOldDevServer();
  try {
    const connection = await connectClient({ address: old.address });
    await new Client({ connection }).workflow.start(greetingWorkflow, { taskQueue, workflowId, args: ['courier'], typedSearchAttributes: [{ key: OrderReference, value: 'UPG-1' }] });
    await connection.close();
  } finally {
    await old.stop();
  }

  server = await startDevServer({ tools: await ensureServerTools(), dbFilename });
  expect(server.serverVersion).toBe(TEMPORAL_SERVER_VERSION.slice(1));
  expect(existsSync(`${dbFilename}.before-${TEMPORAL_SERVER_VERSION}`)).toBe(true);
  expect(readFileSync(versionFile(dbFilename), 'utf8').trim()).toBe(TEMPORAL_SERVER_VERSION);

  const connection = await connectClient({ address: server.address });
  const nativeConnection = await NativeConnection.connect({ address: server.address });
  try {
    const client = new Client({ connection });
    // Visibility came across: the open workflow is found by the search attribute it was started with.
    const found = await client.workflow.count(`OrderReference = 'UPG-1' AND ExecutionStatus = 'Running'`);
    expect(found.count).toBe(1);
    const worker = await Worker.create({
      connection: nativeConnection,
      taskQueue,
      workflowsPath: require.resolve('./fixtures/greeting-workflow'),
      activities: { greet: async (name: string) => `hello, ${name}` },
    });
    expect(await worker.runUntil(client.workflow.getHandle(workflowId).result())).toBe('hello, courier');
    expect((await client.workflow.count(`OrderReference = 'UPG-1' AND ExecutionStatus = 'Completed'`)).count).toBe(1);
  } finally {
    await nativeConnection.close();
    await connection.close();
  }
}, 180_000);
