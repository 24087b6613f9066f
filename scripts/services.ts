/**
 * The project's own processes of a local stack (`npm start`, `npm run cluster`): each a
 * TypeScript entry point run as a child, its output prefixed by its name. A child that exits
 * before the stack is stopped is reported to `onExit` (which stops the stack).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { stopProcess } from './temporal-dev-server';

const root = join(__dirname, '..');

export class StackServices {
  private readonly children: ChildProcess[] = [];
  private stopping = false;

  constructor(private readonly onExit: (name: string, how: string) => void) {}

  /** Starts `entry`; resolves once the child prints a line matching `ready`. */
  run(name: string, entry: string, env: NodeJS.ProcessEnv, ready: RegExp): Promise<ChildProcess> {
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, entry)], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let markReady: () => void = () => undefined;
    const isReady = new Promise<void>((r) => (markReady = r));
    const prefix = (chunk: Buffer) =>
      chunk
        .toString()
        .split('\n')
        .filter(Boolean)
        .forEach((l) => {
          process.stdout.write(`[${name}] ${l}\n`);
          if (ready.test(l)) markReady();
        });
    child.stdout?.on('data', prefix);
    child.stderr?.on('data', prefix);
    child.on('exit', (code, signal) => {
      if (!this.stopping) this.onExit(name, String(signal ?? code));
    });
    this.children.push(child);
    return isReady.then(() => child);
  }

  /** Stops every child; their exits are expected from now on. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.children.map((c) => stopProcess(c)));
  }
}
