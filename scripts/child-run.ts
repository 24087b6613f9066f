/**
 * A server started as a child process of the stack (nginx, Prometheus), as the supervisor sees
 * it: its output passed on line by line and its last lines kept, ready once `ready()` says so,
 * a failure to start named with what it said.
 */
import type { ChildProcess } from 'node:child_process';
import type { Run } from './supervisor';

export async function childReady(child: ChildProcess, o: { what: string; where: string; ready: () => Promise<boolean>; output?: (line: string) => void; timeoutMs?: number }): Promise<Run> {
  const exited = new Promise<string>((r) => child.once('exit', (code, signal) => r(signal ?? `code ${code}`)));
  let recent = '';
  const onData = (chunk: Buffer) => {
    recent = (recent + chunk.toString()).slice(-4000);
    for (const line of chunk.toString().split('\n').filter(Boolean)) o.output?.(line);
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const timeoutMs = o.timeoutMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${o.what} exited while starting (${o.where}):\n${recent.trim()}`);
    if (await o.ready()) return { pid: child.pid, exited, lastLines: () => recent };
    if (Date.now() > deadline) throw new Error(`${o.what} did not listen on ${o.where} within ${timeoutMs / 1000} s:\n${recent.trim()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
