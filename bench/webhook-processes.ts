/**
 * The processes of the webhooks benchmark besides Temporal's: the delivery worker
 * (`worker/main.ts`), the bridge (`bridge/main.ts`) and the raw-signal script
 * (`bench/raw-signals.ts`), each run as an operator runs it (`node --import tsx <entry>`),
 * configured only through its environment. Output goes to a file, so a chatty process (the
 * bridge logs one line per webhook) costs the benchmark's own event loop nothing; it is kept
 * for the figures read from it and shown when a process fails.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import type { RawCommand, RawLatencies } from './raw-signals';
import { processCpuSeconds, sleep } from './webhook-load';

const ROOT = join(__dirname, '..');

/** The caller's own Temporal, provider, worker and bridge settings never leak into a process. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !/^(TEMPORAL_|DELIVERY_|PROVIDER_|WORKER_|SIMULATOR_|BRIDGE_)/.test(k)) env[k] = v;
  return { ...env, ...extra };
}

export interface ServiceSpec {
  name: string;
  /** Entry point from the repository root. */
  entry: string;
  env: Record<string, string>;
  /** Up once its output file matches this. */
  ready?: RegExp;
  /** Extra node flags, e.g. --cpu-prof. */
  nodeArgs?: string[];
  /** Keep stdout as a pipe (the raw-signal script answers on it); stderr still goes to the file. */
  pipeStdout?: boolean;
  startTimeoutMs?: number;
}

export class Service {
  readonly logFile: string;
  readonly child: ChildProcess;
  private readonly exit: Promise<void>;

  private constructor(readonly spec: ServiceSpec) {
    this.logFile = join(tmpdir(), `bench-webhooks-${process.pid}-${spec.name}.log`);
    const fd = openSync(this.logFile, 'w');
    this.child = spawn(process.execPath, [...(spec.nodeArgs ?? []), '--import', 'tsx', join(ROOT, spec.entry)], {
      cwd: ROOT,
      env: cleanEnv(spec.env),
      stdio: [spec.pipeStdout ? 'pipe' : 'ignore', spec.pipeStdout ? 'pipe' : fd, fd],
    });
    closeSync(fd);
    this.exit = new Promise((resolve) => this.child.once('exit', () => resolve()));
  }

  static async start(spec: ServiceSpec): Promise<Service> {
    const s = new Service(spec);
    if (spec.ready) await s.waitFor(spec.ready, spec.startTimeoutMs ?? 120_000);
    return s;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  cpuSeconds(): number | undefined {
    return processCpuSeconds(this.child.pid);
  }

  output(): string {
    return existsSync(this.logFile) ? readFileSync(this.logFile, 'utf8') : '';
  }

  async waitFor(pattern: RegExp, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!pattern.test(this.output())) {
      if (!this.running) throw new Error(`${this.spec.name} exited (${this.child.signalCode ?? this.child.exitCode}):\n${this.output().slice(-3000)}`);
      if (Date.now() > deadline) throw new Error(`${this.spec.name} was not up within ${timeoutMs / 1000} s:\n${this.output().slice(-3000)}`);
      await sleep(100);
    }
  }

  /** SIGTERM (the process shuts down as in production), SIGKILL after 15 s. */
  async stop(): Promise<void> {
    if (this.running) {
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 15_000);
      await this.exit;
      clearTimeout(timer);
    }
  }

  removeLog(): void {
    rmSync(this.logFile, { force: true });
  }
}

/** bench/raw-signals.ts: one command line in, one JSON line out. */
export class RawSignalsProcess {
  private readonly lines: Interface;
  private readonly waiting: ((line: string) => void)[] = [];
  private readonly queued: string[] = [];

  private constructor(readonly service: Service) {
    this.lines = createInterface({ input: service.child.stdout! });
    this.lines.on('line', (line) => {
      const w = this.waiting.shift();
      if (w) w(line);
      else this.queued.push(line);
    });
  }

  static async start(env: Record<string, string>): Promise<RawSignalsProcess> {
    const service = await Service.start({ name: 'raw-signals', entry: 'bench/raw-signals.ts', env, pipeStdout: true });
    const raw = new RawSignalsProcess(service);
    const first = await raw.next(120_000);
    if (!(JSON.parse(first) as { ready?: boolean }).ready) throw new Error(`raw-signals: unexpected first line ${first}`);
    return raw;
  }

  private next(timeoutMs: number): Promise<string> {
    const queued = this.queued.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`raw-signals gave no answer within ${timeoutMs / 1000} s:\n${this.service.output().slice(-3000)}`)), timeoutMs);
      this.waiting.push((line) => {
        clearTimeout(timer);
        resolve(line);
      });
    });
  }

  async run<T = RawLatencies>(command: RawCommand): Promise<T> {
    this.service.child.stdin!.write(JSON.stringify(command) + '\n');
    const answer = JSON.parse(await this.next(600_000)) as T & { error?: string };
    if (answer.error) throw new Error(`raw-signals: ${answer.error}`);
    return answer;
  }

  async stop(): Promise<void> {
    this.service.child.stdin!.end();
    const timer = setTimeout(() => void this.service.stop(), 10_000);
    await new Promise((r) => (this.service.running ? this.service.child.once('exit', r) : r(undefined)));
    clearTimeout(timer);
    this.lines.close();
  }
}
