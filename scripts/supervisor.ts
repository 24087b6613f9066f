/**
 * What Kubernetes or systemd does for a deployment, for the processes of a local stack (`npm
 * start`, `npm run cluster`): a part that exits on its own is started again while the others
 * keep serving, after a delay that doubles with each failure in a row (1 s, 2 s, 4 s ... 30 s at
 * most; back to 1 s once a run has lasted a minute), with one line when it goes and one when its
 * readiness check passes again:
 *
 *   matching-1 exited (SIGKILL); restarting in 1 s
 *   matching-1 is back after 4.2 s
 *
 * A part that keeps failing right away (5 times in a row, each before it was ready or within
 * 10 s of being ready) is not going to heal by itself: the stack stops, naming it and its last
 * lines (onCrashLoop). The clock is injectable so that this policy is a unit test.
 */

export interface Clock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
};

/** One run of a part, from the moment its readiness check passed. */
export interface Run {
  /** Its process id (for an operator, or a test that kills it). */
  readonly pid?: number;
  /** Settles when it has exited, with how: `SIGKILL`, `code 1`. */
  readonly exited: Promise<string>;
  /** What it said last, for the crash-loop message. */
  lastLines(): string;
}

export interface Part {
  name: string;
  /** Starts the part and resolves once it is ready; rejects (saying why, with its output) when it exits or fails first. */
  start(): Promise<Run>;
}

export interface RestartPolicy {
  /** Delay before the first restart; it doubles with each failure in a row. */
  firstDelayMs: number;
  maxDelayMs: number;
  /** A run that lasted this long resets the delay. */
  stableAfterMs: number;
  /** A run that ends within this time of being ready (or before) is a quick failure. */
  quickFailureMs: number;
  /** This many quick failures in a row stop the stack. */
  crashLoopAfter: number;
}

export const DEFAULT_POLICY: RestartPolicy = { firstDelayMs: 1_000, maxDelayMs: 30_000, stableAfterMs: 60_000, quickFailureMs: 10_000, crashLoopAfter: 5 };

export interface SupervisorOptions {
  /** Where the restart lines go (the stack's own prefix is the caller's). */
  log: (line: string) => void;
  /** A part is in a crash loop: the message names it and carries its last lines; the caller stops the stack. */
  onCrashLoop: (name: string, message: string) => void;
  clock?: Clock;
  policy?: Partial<RestartPolicy>;
}

export interface PartStatus {
  name: string;
  state: 'running' | 'restarting' | 'gave up' | 'stopped';
  pid?: number;
  /** How many times it was started again. */
  restarts: number;
  /** How long it was gone before its last start again (its end to its readiness), in ms. */
  backAfterMs?: number;
}

interface Watched {
  part: Part;
  run?: Run;
  state: PartStatus['state'];
  restarts: number;
  /** Failures since the last stable run (sets the delay). */
  failures: number;
  /** Quick failures in a row. */
  quick: number;
  /** When its last run ended: "back after" counts from there. */
  downSince: number;
  backAfterMs?: number;
}

const seconds = (ms: number) => `${Number.isInteger(ms / 1000) ? ms / 1000 : (ms / 1000).toFixed(1)} s`;
const lastLinesOf = (text: string, n = 15) => text.trimEnd().split('\n').slice(-n).join('\n');

export class Supervisor {
  private readonly clock: Clock;
  private readonly policy: RestartPolicy;
  private readonly parts = new Map<string, Watched>();
  private stopping = false;

  constructor(private readonly o: SupervisorOptions) {
    this.clock = o.clock ?? systemClock;
    this.policy = { ...DEFAULT_POLICY, ...o.policy };
  }

  /**
   * Starts a part for the first time and watches it from then on. A first start that fails
   * rejects: that is the stack's start-up failing, which the caller reports and stops on.
   */
  async start(part: Part): Promise<Run> {
    const w: Watched = { part, state: 'restarting', restarts: 0, failures: 0, quick: 0, downSince: 0 };
    this.parts.set(part.name, w);
    const run = await part.start();
    this.watch(w, run);
    return run;
  }

  /** From now on every exit is expected (Ctrl-C, a stop): nothing is started again. */
  stop(): void {
    this.stopping = true;
    for (const w of this.parts.values()) if (w.state !== 'gave up') w.state = 'stopped';
  }

  /**
   * Stops watching one part, for an operator who stops it on purpose (the Temporal processes and
   * workers of a cluster upgrade): its exit from now on is expected and it is not started again.
   * start() with its name watches it anew.
   */
  release(name: string): void {
    this.parts.delete(name);
  }

  get stopped(): boolean {
    return this.stopping;
  }

  status(name: string): PartStatus | undefined {
    const w = this.parts.get(name);
    return w && { name, state: w.state, pid: w.state === 'running' ? w.run?.pid : undefined, restarts: w.restarts, ...(w.backAfterMs !== undefined && { backAfterMs: w.backAfterMs }) };
  }

  private watch(w: Watched, run: Run): void {
    const readyAt = this.clock.now();
    w.run = run;
    w.state = 'running';
    void run.exited.then((how) => {
      if (this.stopping || w.run !== run || this.parts.get(w.part.name) !== w) return;
      w.downSince = this.clock.now();
      const ranMs = w.downSince - readyAt;
      if (ranMs >= this.policy.stableAfterMs) w.failures = 0;
      void this.failed(w, `exited (${how})`, ranMs < this.policy.quickFailureMs, run.lastLines());
    });
  }

  private async failed(w: Watched, what: string, quick: boolean, lastLines: string): Promise<void> {
    const name = w.part.name;
    w.failures++;
    w.quick = quick ? w.quick + 1 : 0;
    if (w.quick >= this.policy.crashLoopAfter) {
      w.state = 'gave up';
      const lines = lastLinesOf(lastLines);
      this.o.onCrashLoop(
        name,
        `${name} ${what}: it failed ${w.quick} times in a row, each within ${seconds(this.policy.quickFailureMs)} of its start; stopping the stack.` +
          (lines ? ` Its last lines:\n${lines}` : ''),
      );
      return;
    }
    const delay = Math.min(this.policy.maxDelayMs, this.policy.firstDelayMs * 2 ** (w.failures - 1));
    w.state = 'restarting';
    this.o.log(`${name} ${what}; restarting in ${seconds(delay)}`);
    await this.clock.sleep(delay);
    if (this.stopping || this.parts.get(name) !== w) return;
    w.restarts++;
    let run: Run;
    try {
      run = await w.part.start();
    } catch (err) {
      if (this.stopping) return;
      // It did not get as far as ready: a quick failure, whose message carries its output.
      const [first, ...rest] = (err as Error).message.split('\n');
      return this.failed(w, `could not start again (${first!.replace(/:$/, '')})`, true, rest.join('\n'));
    }
    if (this.stopping) return;
    w.backAfterMs = this.clock.now() - w.downSince;
    this.o.log(`${name} is back after ${(w.backAfterMs / 1000).toFixed(1)} s`);
    this.watch(w, run);
  }
}
