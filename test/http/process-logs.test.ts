/**
 * A process group's log files (scripts/processes.ts, `logFile`): two processes of one name, as the
 * limits benchmark's two observe fleets each start a `worker-1`, keep their own output. They once
 * shared one file, each overwriting the other's lines: a ready line overwritten was never seen and
 * the round failed with "did not start".
 */
import { ENTRY, ProcessGroup, type RunningProcess } from '../../scripts/processes';
import { freePort } from '../../scripts/temporal-dev-server';

const group = new ProcessGroup();
const started: RunningProcess[] = [];
afterAll(async () => {
  await group.stopAll();
  started.forEach((p) => p.removeLog());
});

it('gives each start of a same-named process a log file of its own', async () => {
  const ports = [await freePort(), await freePort()];
  for (const port of ports) {
    started.push(await group.start({ name: 'twin', ...ENTRY.simulator, env: { SIMULATOR_PORT: String(port), SIMULATOR_HOST: '127.0.0.1' }, isolated: true, logFile: true }));
  }
  const [first, second] = started.map((p) => p.output());
  expect(first).toContain(`:${ports[0]}`);
  expect(first).not.toContain(`:${ports[1]}`);
  expect(second).toContain(`:${ports[1]}`);
  expect(second).not.toContain(`:${ports[0]}`);
});
