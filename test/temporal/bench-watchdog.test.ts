/**
 * The benchmarks' watchdog (bench/temporal.ts) ends a run at its time limit by SIGKILLing every
 * process the benchmark started, found through /proc: checked here against a real worker process
 * and a grandchild, alone in this file (it kills every child of this jest worker).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { descendants, killDescendants } from '../../bench/temporal';
import { ENTRY, ProcessGroup } from '../../scripts/processes';
import { testServerAddress, uniqueTaskQueue } from '../helpers/temporal';

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
  const group = new ProcessGroup();
  const worker = await group.start({ name: 'worker', ...ENTRY.worker, env: { TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: namespace, DELIVERY_TASK_QUEUE: uniqueTaskQueue('watchdog'), LOG_LEVEL: 'WARN' } });
  // A shell whose own child would be orphaned, out of sight, if the shell died first.
  const shell = spawn('sh', ['-c', 'sleep 120 & echo $!; wait'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const grandchild = await new Promise<number>((resolve) => shell.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));

  const found = descendants();
  expect(found).toEqual(expect.arrayContaining([worker.pid, shell.pid, grandchild]));
  const killed = killDescendants();
  expect(killed).toEqual(expect.arrayContaining([worker.pid, shell.pid, grandchild]));
  expect(await worker.exited).toMatchObject({ signal: 'SIGKILL' });
  await new Promise((r) => setTimeout(r, 200));
  for (const pid of [worker.pid!, shell.pid!, grandchild]) expect(alive(pid)).toBe(false);
  expect(descendants().filter(alive)).toEqual([]);
}, 120_000);
