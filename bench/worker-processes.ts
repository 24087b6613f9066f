/**
 * Delivery workers as real processes (`worker/main.ts`), for benchmarks that kill and restart
 * them. A prebuilt workflow bundle makes a restart take about a second instead of a bundling.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleWorkflows } from '../worker/worker';

const ROOT = join(__dirname, '..');

export async function prebuiltBundle(): Promise<string> {
  const file = join(tmpdir(), `delivery-workflows-${process.pid}.js`);
  writeFileSync(file, (await bundleWorkflows()).code);
  return file;
}

export class WorkerProcess {
  private child?: ChildProcess;
  private output = '';
  starts = 0;

  constructor(
    readonly name: string,
    private readonly env: Record<string, string>,
  ) {}

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Starts the process; resolves once it polls (its "worker: task queue" line). */
  start(): Promise<void> {
    this.starts++;
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'worker/main.ts')], {
      cwd: ROOT,
      env: { ...process.env, LOG_LEVEL: 'WARN', ...this.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.name} did not start within 60 s:\n${this.output.slice(-2000)}`)), 60_000);
      const take = (chunk: Buffer) => {
        this.output = (this.output + chunk.toString()).slice(-20_000);
        if (/worker: task queue/.test(chunk.toString())) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout!.on('data', take);
      child.stderr!.on('data', take);
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        if (signal !== 'SIGKILL' && signal !== 'SIGTERM') reject(new Error(`${this.name} exited (${signal ?? code}):\n${this.output.slice(-2000)}`));
      });
    });
  }

  /** SIGKILL: no shutdown, no goodbye to the server; what a crash or an OOM kill does. */
  kill(): void {
    this.child?.kill('SIGKILL');
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
}
