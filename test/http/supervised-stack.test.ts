/**
 * The way `npm start` and `npm run cluster` run their processes (SupervisedStack in
 * scripts/processes.ts), with a real process: the simulator, SIGKILLed, is started again by the
 * stack and answers on the same port; stopping the stack (Ctrl-C) stops it for good. The crash
 * loop and the delays are unit tests (test/unit/supervisor.test.ts); the cluster's parts are
 * killed in test/cluster/cluster.test.ts.
 */
import { ENTRY, SupervisedStack } from '../../scripts/processes';
import { freePort } from '../../scripts/temporal-dev-server';

const lines: string[] = [];
const exits: { code: number; why?: string }[] = [];
const stack = new SupervisedStack({ log: (l) => lines.push(l), stopRest: async () => undefined, exit: (code, why) => exits.push({ code, why }) });
let url: string;

beforeAll(async () => {
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  await stack.start({ name: 'simulator', ...ENTRY.simulator, env: { SIMULATOR_PORT: String(port), SIMULATOR_HOST: '127.0.0.1' }, isolated: true });
});
afterAll(() => stack.shutdown(0));

async function until<T>(what: string, fn: () => T | undefined, timeoutMs = 30_000): Promise<T> {
  for (const deadline = Date.now() + timeoutMs; ; await new Promise((r) => setTimeout(r, 100))) {
    const v = fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${lines.join('\n')}`);
  }
}

const answers = () =>
  fetch(`${url}/_sim/deliveries`, { signal: AbortSignal.timeout(5_000) }).then(
    (r) => r.status,
    () => 'refused',
  );

it('starts a process that was SIGKILLed again, on the same port, and says so', async () => {
  const { pid } = stack.supervisor.status('simulator')!;
  expect(await answers()).toBe(200);
  process.kill(pid!, 'SIGKILL');
  const back = await until('the simulator to be back', () => {
    const s = stack.supervisor.status('simulator')!;
    return s.state === 'running' && s.pid !== pid ? s : undefined;
  });
  expect(back.restarts).toBe(1);
  expect(await answers()).toBe(200);
  expect(lines[0]).toBe('simulator exited (SIGKILL); restarting in 1 s');
  expect(lines[1]).toMatch(/^simulator is back after \d+\.\d s$/);
  expect(exits).toEqual([]);
});

it('stops for good when the stack stops (Ctrl-C): nothing is started again', async () => {
  const { pid } = stack.supervisor.status('simulator')!;
  await stack.shutdown(0);
  expect(exits).toEqual([{ code: 0, why: undefined }]);
  expect(() => process.kill(pid!, 0)).toThrow();
  await new Promise((r) => setTimeout(r, 1_500));
  expect(await answers()).toBe('refused');
  expect(stack.supervisor.status('simulator')!.state).toBe('stopped');
  expect(lines.slice(-2)).toEqual(['stopping...', 'stopped']);
});
