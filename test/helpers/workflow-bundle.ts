/**
 * The product's workflow bundle, built once per jest run by the projects' global setup and read
 * from a file by every test file of the run: webpack takes 5-15 s per bundle on a busy 2-core
 * machine, and nearly 30 test files start delivery workers. TEST_WORKFLOW_BUNDLE names the file;
 * without it (a project with no global setup), a test file bundles the workflows itself.
 * Only the plain bundle is shared; a worker that exports traces needs the traced one.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { WorkflowBundle } from '@temporalio/worker';
import { tracingConfigFromEnv } from '../../tracing/config';
import { bundleWorkflows } from '../../worker/worker';

/** Global setup: bundles the workflows into a file of this run (once, whichever project asks first). */
export async function prepareRunBundle(): Promise<void> {
  if (process.env.TEST_WORKFLOW_BUNDLE) return;
  const file = join(mkdtempSync(join(tmpdir(), 'test-workflows-')), 'workflows.js');
  writeFileSync(file, (await bundleWorkflows()).code);
  process.env.TEST_WORKFLOW_BUNDLE = file;
}

/** Global teardown. */
export function removeRunBundle(): void {
  const file = process.env.TEST_WORKFLOW_BUNDLE;
  if (file) rmSync(dirname(file), { recursive: true, force: true });
  delete process.env.TEST_WORKFLOW_BUNDLE;
}

/** The run's bundle file for a worker process with this environment, if it can use it (WORKER_WORKFLOW_BUNDLE). */
export function runBundleFile(workerEnv: NodeJS.ProcessEnv = process.env): string | undefined {
  return tracingConfigFromEnv('delivery-worker', workerEnv) === undefined ? process.env.TEST_WORKFLOW_BUNDLE : undefined;
}

/** The run's bundle for in-process workers and replays, or a new one. */
export async function plainWorkflowBundle(): Promise<WorkflowBundle> {
  const file = process.env.TEST_WORKFLOW_BUNDLE;
  return file ? { code: readFileSync(file, 'utf8') } : bundleWorkflows();
}
