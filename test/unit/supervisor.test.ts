/**
 * The local stack's restart policy (scripts/supervisor.ts) on a fake clock: a part that exits is
 * started again after 1 s, 2 s, 4 s ... at most 30 s, with the lines an operator reads; one that
 * keeps failing within seconds of each start stops the stack, naming it and its last lines; a
 * stopped stack starts nothing again.
 */
import { Supervisor, type Clock, type Run } from '../../scripts/supervisor';

/** Time moves only when the test says so; sleepers wake in order. */
class FakeClock implements Clock {
  private t = 0;
  private sleepers: { at: number; wake: () => void }[] = [];
  now(): number {
    return this.t;
  }
  sleep(ms: number): Promise<void> {
    return new Promise((wake) => this.sleepers.push({ at: this.t + ms, wake }));
  }
  /** Moves time on, waking each sleeper due, and lets what it started settle. */
  async advance(ms: number): Promise<void> {
    const until = this.t + ms;
    for (;;) {
      await settled();
      const next = this.sleepers.filter((s) => s.at <= until).sort((a, b) => a.at - b.at)[0];
      if (!next) break;
      this.t = next.at;
      this.sleepers.splice(this.sleepers.indexOf(next), 1);
      next.wake();
    }
    this.t = until;
    await settled();
  }
  get waiting(): number {
    return this.sleepers.length;
  }
}

const settled = async () => {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
};

/** A part whose runs the test ends by hand; each start takes `startMs` on the fake clock. */
function fakePart(clock: FakeClock, name = 'matching-1', startMs = 0) {
  const runs: { exit: (how: string) => void; pid: number }[] = [];
  let failStart: string | undefined;
  const part = {
    name,
    async start(): Promise<Run> {
      if (startMs) await clock.sleep(startMs);
      if (failStart) throw new Error(`${name} exited (code 1) before it was ready:\n${failStart}`);
      let exit!: (how: string) => void;
      const exited = new Promise<string>((r) => (exit = r));
      const pid = 1000 + runs.length;
      runs.push({ exit, pid });
      return { pid, exited, lastLines: () => `line 1 of run ${runs.length}\nunable to bind port of run ${runs.length}` };
    },
  };
  return { part, runs, failStartsWith: (output: string | undefined) => (failStart = output) };
}

function supervisor(clock: FakeClock) {
  const lines: string[] = [];
  const crashes: { name: string; message: string }[] = [];
  const s = new Supervisor({ clock, log: (l) => lines.push(l), onCrashLoop: (name, message) => crashes.push({ name, message }) });
  return { s, lines, crashes };
}

it('restarts a part that exits, after 1 s, and says when it is back (its readiness passed) and how long it was gone', async () => {
  const clock = new FakeClock();
  const { s, lines } = supervisor(clock);
  const p = fakePart(clock, 'matching-1', 3_200);
  const first = s.start(p.part);
  await clock.advance(3_200);
  await first;
  await clock.advance(60_000);
  p.runs[0]!.exit('SIGKILL');
  await clock.advance(0);
  expect(lines).toEqual(['matching-1 exited (SIGKILL); restarting in 1 s']);
  expect(s.status('matching-1')).toEqual({ name: 'matching-1', state: 'restarting', pid: undefined, restarts: 0 });
  await clock.advance(999);
  expect(p.runs).toHaveLength(1);
  await clock.advance(1 + 3_200);
  expect(lines).toEqual(['matching-1 exited (SIGKILL); restarting in 1 s', 'matching-1 is back after 4.2 s']);
  expect(s.status('matching-1')).toEqual({ name: 'matching-1', state: 'running', pid: 1001, restarts: 1, backAfterMs: 4_200 });
});

it('doubles the delay with each failure in a row up to 30 s, and goes back to 1 s after a run of a minute', async () => {
  const clock = new FakeClock();
  const { s, lines, crashes } = supervisor(clock);
  const p = fakePart(clock, 'history-2');
  await s.start(p.part);
  // Each run lasts 20 s: not a crash loop (not within 10 s of its start), but not stable either.
  for (let i = 0; i < 7; i++) {
    await clock.advance(20_000);
    p.runs[i]!.exit('code 2');
    await clock.advance(40_000);
  }
  expect(lines.filter((l) => l.includes('restarting')).map((l) => l.replace(/^.*restarting in /, ''))).toEqual(['1 s', '2 s', '4 s', '8 s', '16 s', '30 s', '30 s']);
  expect(crashes).toEqual([]);
  // A run of more than a minute: the next failure waits 1 s again.
  await clock.advance(61_000);
  p.runs[7]!.exit('code 2');
  await clock.advance(0);
  expect(lines.at(-1)).toBe('history-2 exited (code 2); restarting in 1 s');
});

it('stops the stack when a part fails 5 times in a row within seconds of each start, naming it and its last lines', async () => {
  const clock = new FakeClock();
  const { s, lines, crashes } = supervisor(clock);
  const p = fakePart(clock, 'bridge-2', 500);
  const first = s.start(p.part);
  await clock.advance(500);
  await first;
  for (let i = 0; i < 4; i++) {
    await clock.advance(2_000);
    p.runs[i]!.exit('SIGKILL');
    await clock.advance(1_000 * 2 ** i + 500); // its delay, then its start
    expect(s.status('bridge-2')?.state).toBe('running');
  }
  expect(crashes).toEqual([]);
  await clock.advance(2_000);
  p.runs[4]!.exit('SIGKILL');
  await clock.advance(0);
  expect(crashes).toHaveLength(1);
  expect(crashes[0]!.name).toBe('bridge-2');
  expect(crashes[0]!.message).toBe(
    'bridge-2 exited (SIGKILL): it failed 5 times in a row, each within 10 s of its start; stopping the stack. Its last lines:\nline 1 of run 5\nunable to bind port of run 5',
  );
  expect(s.status('bridge-2')?.state).toBe('gave up');
  // Nothing is started again, and no restart line follows the verdict.
  const logged = lines.length;
  await clock.advance(120_000);
  expect(p.runs).toHaveLength(5);
  expect(lines).toHaveLength(logged);
});

it('counts a restart that fails before its readiness check as a quick failure, with the reason in the line', async () => {
  const clock = new FakeClock();
  const { s, lines, crashes } = supervisor(clock);
  const p = fakePart(clock, 'postgresql');
  await s.start(p.part);
  p.failStartsWith('FATAL: pre-existing shared memory block is still in use');
  p.runs[0]!.exit('SIGKILL');
  await clock.advance(1_000 + 2_000 + 4_000 + 8_000 - 1);
  expect(lines).toEqual([
    'postgresql exited (SIGKILL); restarting in 1 s',
    'postgresql could not start again (postgresql exited (code 1) before it was ready); restarting in 2 s',
    'postgresql could not start again (postgresql exited (code 1) before it was ready); restarting in 4 s',
    'postgresql could not start again (postgresql exited (code 1) before it was ready); restarting in 8 s',
  ]);
  // The old server's processes went away: the fourth restart works.
  p.failStartsWith(undefined);
  await clock.advance(1);
  expect(lines.at(-1)).toBe('postgresql is back after 15.0 s');
  expect(crashes).toEqual([]);
  expect(s.status('postgresql')).toMatchObject({ state: 'running', restarts: 4 });
  // Failing again at once is the fifth quick failure in a row.
  p.runs[1]!.exit('code 1');
  await clock.advance(0);
  expect(crashes.map((c) => c.name)).toEqual(['postgresql']);
  expect(crashes[0]!.message).toMatch(/^postgresql exited \(code 1\): it failed 5 times in a row, each within 10 s of its start; stopping the stack\. Its last lines:\nline 1 of run 2\n/);
});

it('starts nothing again once the stack is stopping (Ctrl-C): exits are expected then, and a pending restart is dropped', async () => {
  const clock = new FakeClock();
  const { s, lines } = supervisor(clock);
  const a = fakePart(clock, 'worker-1');
  const b = fakePart(clock, 'worker-2');
  await s.start(a.part);
  await s.start(b.part);
  a.runs[0]!.exit('SIGKILL');
  await clock.advance(0);
  expect(clock.waiting).toBe(1); // worker-1's restart is waiting out its delay
  s.stop();
  b.runs[0]!.exit('SIGTERM');
  await clock.advance(60_000);
  expect(lines).toEqual(['worker-1 exited (SIGKILL); restarting in 1 s']);
  expect([a.runs.length, b.runs.length]).toEqual([1, 1]);
  expect(s.status('worker-2')?.state).toBe('stopped');
});

it('rejects when a first start fails: that is the stack’s start-up failing, not something to retry', async () => {
  const clock = new FakeClock();
  const { s, lines } = supervisor(clock);
  const p = fakePart(clock, 'codec');
  p.failStartsWith('DELIVERY_PAYLOAD_KEYS: required');
  await expect(s.start(p.part)).rejects.toThrow(/^codec exited \(code 1\) before it was ready:\nDELIVERY_PAYLOAD_KEYS: required$/);
  await clock.advance(60_000);
  expect(lines).toEqual([]);
});

it('a released part (stopped on purpose, e.g. for an upgrade) is not started again, and a start with its name watches the new one', async () => {
  const clock = new FakeClock();
  const { s, lines } = supervisor(clock);
  const p = fakePart(clock, 'history-1');
  await s.start(p.part);
  s.release('history-1');
  p.runs[0]!.exit('code 0');
  await clock.advance(60_000);
  expect({ lines, runs: p.runs.length, status: s.status('history-1') }).toEqual({ lines: [], runs: 1, status: undefined });
  // Released while it waited to be started again: it stays down.
  await s.start(p.part);
  p.runs[1]!.exit('SIGKILL');
  await clock.advance(0);
  s.release('history-1');
  await clock.advance(60_000);
  expect({ lines, runs: p.runs.length }).toEqual({ lines: ['history-1 exited (SIGKILL); restarting in 1 s'], runs: 2 });
  // Started anew under its name: watched again.
  await s.start(p.part);
  p.runs[2]!.exit('SIGKILL');
  await clock.advance(1_000);
  expect(p.runs.length).toBe(4);
});
