/**
 * The benchmarks' watchdog (bench/temporal.ts) ends a run at its time limit by SIGKILLing every
 * process the benchmark started, found through /proc: checked against a real worker process and a
 * grandchild, in a process of its own (test/fixtures/watchdog-run.ts), as a benchmark runs.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from '../../scripts/processes';
import { testDeployment, testServerAddress, uniqueTaskQueue } from '../helpers/temporal';

/** Running: in /proc and not a zombie (a killed process waits there until its parent, or init, reaps it). */
const alive = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
};

it('kills a running worker and the grandchild of another child, leaving none behind', async () => {
  const { address, namespace } = testServerAddress();
  const taskQueue = uniqueTaskQueue('watchdog');
  const env: NodeJS.ProcessEnv = { ...process.env, TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: namespace, DELIVERY_TASK_QUEUE: taskQueue, ...testDeployment(taskQueue) };
  delete env.NODE_OPTIONS;
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', join(ROOT, 'test/fixtures/watchdog-run.ts')], { cwd: ROOT, env, timeout: 90_000 });
  const r = JSON.parse(stdout.trim().split('\n').at(-1)!) as { worker: number; shell: number; grandchild: number; found: number[]; killed: number[]; workerSignal: string };
  expect(r.found).toEqual(expect.arrayContaining([r.worker, r.shell, r.grandchild]));
  expect(r.killed).toEqual(expect.arrayContaining([r.worker, r.shell, r.grandchild]));
  expect(r.workerSignal).toBe('SIGKILL');
  await new Promise((res) => setTimeout(res, 300));
  for (const pid of [r.worker, r.shell, r.grandchild]) expect([pid, alive(pid)]).toEqual([pid, false]);
}, 120_000);
