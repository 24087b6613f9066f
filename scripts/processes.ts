/**
 * The project's own processes (simulator, worker, bridge, codec server, bench scripts), run as an
 * operator runs them (`node --import tsx <entry>`) and configured only through their environment:
 * one helper for `npm start`, `npm run cluster`, the integration tests and the benchmarks.
 * A group keeps its processes' output, prefixed with each one's name, so a failure can show it;
 * a chatty process can write to a file instead (`logFile`), which costs the caller's event loop
 * nothing (the bridge logs a line per webhook while a benchmark measures it).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Supervisor, type Clock, type Run } from './supervisor';
import { stopProcess } from './temporal-dev-server';
import { tracingConfigFromEnv } from '../tracing/config';

export const ROOT = join(__dirname, '..');

/** Entry point and "ready" line of each service. */
export const ENTRY = {
  simulator: { entry: 'simulator/main.ts', ready: /listening on/ },
  worker: { entry: 'worker/main.ts', ready: /^worker: task queue/m },
  bridge: { entry: 'bridge/main.ts', ready: /^bridge: listening/m },
  codec: { entry: 'temporal/codec-server.ts', ready: /^codec: listening/m },
  fleet: { entry: 'fleet/main.ts', ready: /^fleet: metrics/m },
} as const;

export interface ProcessSpec {
  /** Shown before each line of its output, e.g. `worker#3`. */
  name: string;
  /** Path of the entry point from the repository root. */
  entry: string;
  /** Added to the environment. */
  env: NodeJS.ProcessEnv;
  /** Started once its output matches this; without it, at once. */
  ready?: RegExp;
  /** 0: wait for the ready line as long as it takes. */
  startTimeoutMs?: number;
  /** Node flags before the entry, e.g. --max-old-space-size=512 or --cpu-prof. */
  nodeArgs?: string[];
  /** Leave out the caller's own TEMPORAL_*, DELIVERY_*, PROVIDER_*, WORKER_*, SIMULATOR_* and BRIDGE_* settings. */
  isolated?: boolean;
  /** Output to a file of its own instead of through the caller (see output()). */
  logFile?: boolean;
  /** Keep stdin and stdout as pipes (a process that answers on stdout); stderr still goes to the file. */
  interactive?: boolean;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface RunningProcess {
  readonly name: string;
  readonly child: ChildProcess;
  readonly pid: number | undefined;
  /** Settles when the process has exited, however it ended. */
  readonly exited: Promise<Exit>;
  readonly running: boolean;
  /** Sends the signal and waits for the process to be gone. */
  kill(signal?: NodeJS.Signals): Promise<Exit>;
  /** SIGTERM, then SIGKILL after a grace period. */
  stop(graceMs?: number): Promise<void>;
  /** What it has said so far: with `logFile`, the file's content; else its last 200,000 characters. */
  output(): string;
  /** Deletes its log file, if any. */
  removeLog(): void;
}

export interface ProcessGroupOptions {
  /** How much output is kept (the oldest is dropped); everything by default. */
  maxOutputChars?: number;
  /** Also print every line, prefixed, on this process's stdout (a local stack's console). */
  echo?: boolean;
  /** Called when a process exits before stopAll() (a benchmark ends then; a local stack restarts it through its supervisor instead). */
  onUnexpectedExit?: (name: string, how: string) => void;
}

const isolatedEnv = (): NodeJS.ProcessEnv => Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(TEMPORAL_|DELIVERY_|PROVIDER_|WORKER_|SIMULATOR_|BRIDGE_)/.test(k)));

/**
 * A child's environment. NODE_OPTIONS is the caller's own (jest's, a profiler's `--cpu-prof`, a
 * benchmark's `--expose-gc`), not the child's: it goes on only when the spec sets it.
 */
export function childEnv(spec: Pick<ProcessSpec, 'isolated' | 'env'>): NodeJS.ProcessEnv {
  const { NODE_OPTIONS: _callers, ...inherited } = spec.isolated ? isolatedEnv() : process.env;
  return { ...inherited, ...spec.env };
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** What output() keeps of a process whose output goes through the group. */
const OWN_OUTPUT_CHARS = 200_000;

/** Log files made by this process so far: each start's file is its own. */
let logFiles = 0;

/** The processes of one test file, benchmark or local stack, with their output. */
export class ProcessGroup {
  private chunks: string[] = [];
  private size = 0;
  private stopping = false;
  private readonly running = new Set<RunningProcess>();

  constructor(private readonly o: ProcessGroupOptions = {}) {}

  /** Everything the processes (and the caller, through log()) said, oldest first. */
  get output(): string {
    return this.chunks.join('');
  }

  /** The last `chars` characters of the output (of the lines `keep` accepts), for failure messages. */
  tail(chars = 6_000, keep?: (line: string) => boolean): string {
    const text = keep ? this.output.split('\n').filter(keep).join('\n') : this.output;
    return text.slice(-chars);
  }

  log(name: string, text: string): void {
    const line = text
      .split('\n')
      .filter((l, i, all) => l !== '' || i < all.length - 1)
      .map((l) => `[${name}] ${l}\n`)
      .join('');
    if (this.o.echo) process.stdout.write(line);
    this.chunks.push(line);
    this.size += line.length;
    while (this.size > (this.o.maxOutputChars ?? Number.POSITIVE_INFINITY) && this.chunks.length > 1) this.size -= this.chunks.shift()!.length;
  }

  /** Starts a process and waits until it says it is ready; rejects, with its output, if it exits first. */
  async start(spec: ProcessSpec): Promise<RunningProcess> {
    // A file of each start's own: two processes of one name (each observe fleet's worker-1) once shared one, each
    // overwriting the other's lines, and a ready line overwritten was never seen (bench/limits.ts, "did not start").
    const logFile = spec.logFile || spec.interactive ? join(tmpdir(), `delivery-${process.pid}-${++logFiles}-${spec.name.replace(/[^\w.-]/g, '_')}.log`) : undefined;
    const fd = logFile ? openSync(logFile, 'w') : undefined;
    const child = spawn(process.execPath, [...(spec.nodeArgs ?? []), '--import', 'tsx', join(ROOT, spec.entry)], {
      cwd: ROOT,
      env: childEnv(spec),
      stdio: fd === undefined ? ['ignore', 'pipe', 'pipe'] : [spec.interactive ? 'pipe' : 'ignore', spec.interactive ? 'pipe' : fd, fd],
    });
    if (fd !== undefined) closeSync(fd);
    // 'close' comes after the output has been read to its end.
    const exited = new Promise<Exit>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
    let said = ''; // this process's own output (names repeat across a group's life)
    const proc: RunningProcess = {
      name: spec.name,
      child,
      pid: child.pid,
      exited,
      get running() {
        return child.exitCode === null && child.signalCode === null;
      },
      async kill(signal: NodeJS.Signals = 'SIGKILL') {
        if (proc.running) child.kill(signal);
        return exited;
      },
      stop: async (graceMs?: number) => {
        await stopProcess(child, graceMs);
        await exited;
      },
      output: () => (logFile ? (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '') : said),
      removeLog: () => logFile && rmSync(logFile, { force: true }),
    };
    this.running.add(proc);
    void exited.then(({ code, signal }) => {
      this.running.delete(proc);
      if (!this.stopping) this.o.onUnexpectedExit?.(spec.name, String(signal ?? code));
    });
    if (fd === undefined) this.collect(spec.name, child, (text) => (said = (said + text).slice(-OWN_OUTPUT_CHARS)));
    if (spec.ready) await this.waitReady(proc, spec.ready, spec.startTimeoutMs ?? 60_000);
    return proc;
  }

  /** Whole lines only, so a JSON log line or the ready line is never cut in two. */
  private collect(name: string, child: ChildProcess, own: (text: string) => void): void {
    for (const stream of [child.stdout!, child.stderr!]) {
      let partial = '';
      stream.on('data', (chunk: Buffer) => {
        const text = partial + chunk.toString();
        const end = text.lastIndexOf('\n') + 1;
        partial = text.slice(end);
        if (end > 0) this.lines(name, text.slice(0, end), own);
      });
      stream.on('end', () => partial && this.lines(name, partial + '\n', own));
    }
  }

  private lines(name: string, text: string, own: (text: string) => void): void {
    own(text);
    this.log(name, text);
  }

  /** What start() does with `ready`, for a caller that needs the process before it is ready (e.g. to sample its memory from the spawn). */
  async waitReady(proc: RunningProcess, ready: RegExp, timeoutMs: number): Promise<void> {
    const deadline = timeoutMs > 0 ? Date.now() + timeoutMs : Number.POSITIVE_INFINITY;
    for (;;) {
      if (ready.test(proc.output())) return;
      const why = !proc.running ? `exited (${proc.child.signalCode ?? `code ${proc.child.exitCode}`}) before it was ready` : Date.now() > deadline ? `did not start within ${timeoutMs} ms` : undefined;
      if (why) {
        await proc.kill('SIGKILL');
        throw new Error(`${proc.name} ${why}:\n${proc.output().slice(-6_000)}`);
      }
      await sleep(50);
    }
  }

  /** Stops every process still running (SIGTERM, then SIGKILL) and waits for the end of their output; their exits are expected from now on. */
  async stopAll(): Promise<void> {
    this.stopping = true;
    await Promise.all([...this.running].map((p) => p.stop()));
    this.stopping = false;
  }
}

const bundleFiles = new Map<boolean, Promise<string>>();

/**
 * The workflows bundled once per process, in a file for the worker's WORKER_WORKFLOW_BUNDLE: a
 * worker process then starts (and restarts) in about a second instead of bundling them itself.
 * `workerEnv`: the workers' environment; when it exports traces, the bundle has the workflow
 * tracing interceptors (tracing/worker.ts).
 */
export function workflowBundleFile(workerEnv: NodeJS.ProcessEnv = process.env): Promise<string> {
  const tracing = tracingConfigFromEnv('delivery-worker', workerEnv) !== undefined;
  let file = bundleFiles.get(tracing);
  // Loaded here, not at the top: a local stack's own process needs no worker SDK.
  file ??= import('../worker/worker').then(({ bundleWorkflows }) => bundleWorkflows(undefined, { tracing })).then(({ code }) => {
    const path = join(tmpdir(), `delivery-workflows-${process.pid}${tracing ? '-traced' : ''}.js`);
    writeFileSync(path, code);
    return path;
  });
  bundleFiles.set(tracing, file);
  return file;
}

export async function removeWorkflowBundleFile(): Promise<void> {
  for (const file of bundleFiles.values()) rmSync(await file, { force: true });
  bundleFiles.clear();
}

/** A process of the group as the supervisor sees it: its pid, how it ended, what it said last. */
export function asRun(p: RunningProcess): Run {
  return { pid: p.pid, exited: p.exited.then((e) => e.signal ?? `code ${e.code}`), lastLines: () => p.output().slice(-6_000) };
}

export interface SupervisedStackOptions {
  /** The stack's own lines (restarts, stopping). */
  log: (line: string) => void;
  /** Stops what is not a process of the group (a dev server, a cluster, nginx), after the group's. */
  stopRest: () => Promise<void>;
  /** Called once everything is stopped: `npm start` exits with the code, a test records it. */
  exit: (code: number, why?: string) => void;
  /** Where a failed start-up's reason goes (the console's stderr); the log by default. */
  startFailed?: (message: string) => void;
  group?: ProcessGroupOptions;
  clock?: Clock;
}

/**
 * The processes of a stack under one supervisor (./supervisor.ts), with one way down: a failed
 * start-up, a part in a crash loop, Ctrl-C. Going down, nothing is restarted any more; the
 * group's processes stop, then the rest (`stopRest`), then `exit`. `npm start` and
 * `npm run cluster` run through localStack() below, the cluster tests through this directly.
 */
export class SupervisedStack {
  readonly group: ProcessGroup;
  readonly supervisor: Supervisor;
  private down?: Promise<void>;

  constructor(private readonly o: SupervisedStackOptions) {
    this.group = new ProcessGroup(o.group);
    this.supervisor = new Supervisor({
      log: o.log,
      clock: o.clock,
      onCrashLoop: (_name, message) => {
        o.log(message);
        void this.shutdown(1, message);
      },
    });
  }

  /** Starts one of the project's processes, waits until it is ready and restarts it whenever it exits. */
  start(spec: ProcessSpec): Promise<RunningProcess> {
    let proc!: RunningProcess;
    return this.supervisor
      .start({
        name: spec.name,
        start: async () => asRun((proc = await this.group.start(spec))),
      })
      .then(() => proc);
  }

  /** The same for a part started some other way (nginx, a Temporal service, PostgreSQL). */
  supervise(name: string, start: () => Promise<Run>): Promise<Run> {
    return this.supervisor.start({ name, start });
  }

  get stopping(): boolean {
    return this.down !== undefined;
  }

  shutdown(code: number, why?: string): Promise<void> {
    this.down ??= (async () => {
      this.supervisor.stop();
      this.o.log('stopping...');
      await this.group.stopAll();
      await this.o.stopRest();
      this.o.log('stopped');
      this.o.exit(code, why);
    })();
    return this.down;
  }

  /** Runs the start-up; if it fails, says why and stops what had started. */
  run(startUp: () => Promise<void>): Promise<void> {
    return startUp().catch(async (err: Error) => {
      if (this.stopping) return; // Ctrl-C or a crash loop during the start-up: already on its way down
      (this.o.startFailed ?? this.o.log)(err.message);
      await this.shutdown(1, err.message);
    });
  }
}

/**
 * A local stack (`npm start`, `npm run cluster`): its services' every line on the console, no
 * limit on how long one takes to be ready (a worker bundles its workflows first), each part
 * restarted when it exits (./supervisor.ts), and one way down for Ctrl-C, SIGTERM, a failed
 * start-up and a part in a crash loop: the services, then the stack's own parts (`stopRest`),
 * then exit.
 */
export function localStack(name: string, log: (line: string) => void, stopRest: () => Promise<void>) {
  const stack = new SupervisedStack({
    log,
    stopRest,
    exit: (code) => process.exit(code),
    startFailed: (message) => console.error(`[${name}] ${message}`),
    group: { echo: true, maxOutputChars: 1_000_000 },
  });
  process.on('SIGINT', () => void stack.shutdown(0));
  process.on('SIGTERM', () => void stack.shutdown(0));
  return {
    start: (part: string, entry: string, env: NodeJS.ProcessEnv, ready: RegExp) => stack.start({ name: part, entry, env, ready, startTimeoutMs: 0 }),
    /**
     * The sandbox simulator of the stack: a lifecycle step every 5 s, signed webhooks to `webhookUrl`,
     * and its deliveries, orders, idempotency keys and pending work kept in `dataDir` across restarts.
     */
    startSimulator: (o: { port: number; webhookUrl: string; webhookSecret: string; dataDir: string }) =>
      stack.start({
        name: 'simulator',
        entry: 'simulator/main.ts',
        env: {
          SIMULATOR_PORT: String(o.port),
          SIMULATOR_AUTO_ADVANCE_MS: process.env.SIMULATOR_AUTO_ADVANCE_MS ?? '5000',
          SIMULATOR_WEBHOOK_URL: o.webhookUrl,
          SIMULATOR_WEBHOOK_SECRET: o.webhookSecret,
          SIMULATOR_STATE_FILE: process.env.SIMULATOR_STATE_FILE || join(o.dataDir, 'simulator-state.json'),
        },
        ready: /listening on/,
        startTimeoutMs: 0,
      }),
    /** Supervises a part that is not one of the project's processes (nginx, Temporal's). */
    supervise: (part: string, start: () => Promise<Run>) => stack.supervise(part, start),
    supervisor: stack.supervisor,
    /** Runs the start-up; if it fails, says why and stops what had started. */
    run: (startUp: () => Promise<void>) => stack.run(startUp),
  };
}
