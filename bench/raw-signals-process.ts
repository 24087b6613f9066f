/**
 * The parent's side of bench/raw-signals.ts (the webhooks benchmark's raw-signal baseline, a
 * process of its own): one JSON command line in, one JSON line out.
 */
import { createInterface, type Interface } from 'node:readline';
import { ProcessGroup, type RunningProcess } from '../scripts/processes';
import type { RawCommand, RawLatencies } from './raw-signals';

/** bench/raw-signals.ts: one command line in, one JSON line out. */
export class RawSignalsProcess {
  private readonly lines: Interface;
  private readonly waiting: ((line: string) => void)[] = [];
  private readonly queued: string[] = [];

  private constructor(readonly service: RunningProcess) {
    this.lines = createInterface({ input: service.child.stdout! });
    this.lines.on('line', (line) => {
      const w = this.waiting.shift();
      if (w) w(line);
      else this.queued.push(line);
    });
  }

  static async start(env: Record<string, string>): Promise<RawSignalsProcess> {
    const service = await new ProcessGroup().start({ name: 'raw-signals', entry: 'bench/raw-signals.ts', env, isolated: true, interactive: true });
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
