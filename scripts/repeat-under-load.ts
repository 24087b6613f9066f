/**
 * Runs one test file N times in a row while busy loops keep every core loaded, to show a test
 * does not fail under load (issue #35). The loops are this script's own child processes: it
 * starts them, and stops them when the runs end, on Ctrl-C, or on any error.
 *   npx tsx scripts/repeat-under-load.ts [--times 10] [--loops <cores>] [--log-dir DIR] <test file>
 * Each run's output goes to DIR/<file>-<n>.log (default: a temporary folder); one line per run
 * here, then `repeat: N passed, N failed of N`. Exit code 0 only when every run passed; Ctrl-C or
 * SIGTERM stops the loops and the run under way.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';

const ROOT = join(__dirname, '..');
/** The jest run under way, stopped with the loops if this script is interrupted. */
let current: ChildProcess | undefined;

function busyLoop(): ChildProcess {
  return spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
}

function runOnce(file: string, logFile: string): Promise<{ ok: boolean; ms: number }> {
  const started = Date.now();
  const out = createWriteStream(logFile);
  // jest's own bin (not npx: npm 11's npx serializes concurrent runs and adds its own start-up).
  const child = (current = spawn(process.execPath, [join(ROOT, 'node_modules', 'jest', 'bin', 'jest.js'), '--runInBand', file], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] }));
  child.stdout.pipe(out, { end: false });
  child.stderr.pipe(out, { end: false });
  return new Promise((resolve) =>
    child.on('close', (code) => {
      out.end();
      resolve({ ok: code === 0, ms: Date.now() - started });
    }),
  );
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({ options: { times: { type: 'string', default: '10' }, loops: { type: 'string' }, 'log-dir': { type: 'string' } }, allowPositionals: true });
  const times = Number(values.times);
  const loops = Number(values.loops ?? availableParallelism());
  if (positionals.length !== 1 || !Number.isInteger(times) || times < 1 || !Number.isInteger(loops) || loops < 0) {
    process.stderr.write('usage: npx tsx scripts/repeat-under-load.ts [--times 10] [--loops <cores>] [--log-dir DIR] <test file>\n');
    return 2;
  }
  const file = positionals[0]!;
  const dir = values['log-dir'] ?? mkdtempSync(join(tmpdir(), 'repeat-under-load-'));
  mkdirSync(dir, { recursive: true });
  const busy = Array.from({ length: loops }, busyLoop);
  const stopLoops = () => busy.forEach((b) => b.kill('SIGKILL'));
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => {
      stopLoops();
      current?.kill('SIGTERM');
      process.exit(130);
    });
  process.once('exit', stopLoops);
  let passed = 0;
  try {
    process.stdout.write(`repeat: ${file} ${times} times, ${loops} busy loops, logs in ${dir}\n`);
    for (let n = 1; n <= times; n++) {
      const log = join(dir, `${basename(file)}-${n}.log`);
      const { ok, ms } = await runOnce(file, log);
      if (ok) passed++;
      process.stdout.write(`repeat: run ${n}: ${ok ? 'passed' : `FAILED (${log})`} in ${(ms / 1000).toFixed(0)} s\n`);
    }
  } finally {
    stopLoops();
  }
  process.stdout.write(`repeat: ${passed} passed, ${times - passed} failed of ${times}\n`);
  return passed === times ? 0 : 1;
}

main().then((code) => process.exit(code));
