/**
 * `npm start`: the whole local stack in one command.
 *   - a Temporal dev server (gRPC 127.0.0.1:7233, Web UI http://127.0.0.1:8233, data in .data/),
 *   - the provider simulator (http://127.0.0.1:4010) with statuses advancing on their own.
 * Ctrl-C stops everything; started again, the dev server finds its data where it left it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ensureTemporalCli } from './temporal-cli';
import { startDevServer, stopProcess, type DevServer } from './temporal-dev-server';

const root = join(__dirname, '..');
const dataDir = join(root, '.data');
const TEMPORAL_PORT = Number(process.env.TEMPORAL_PORT ?? 7233);
const TEMPORAL_UI_PORT = Number(process.env.TEMPORAL_UI_PORT ?? 8233);
const SIMULATOR_URL = 'http://127.0.0.1:4010';

const children: { name: string; process: ChildProcess }[] = [];
let devServer: DevServer | undefined;
let stopping = false;

function log(line: string): void {
  process.stdout.write(`[start] ${line}\n`);
}

/** Runs a TypeScript entry point of this project as a child, its output prefixed by its name. */
function runService(name: string, entry: string, env: NodeJS.ProcessEnv): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, entry)], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const prefix = (chunk: Buffer) =>
    chunk
      .toString()
      .split('\n')
      .filter(Boolean)
      .forEach((l) => process.stdout.write(`[${name}] ${l}\n`));
  child.stdout?.on('data', prefix);
  child.stderr?.on('data', prefix);
  child.on('exit', (code, signal) => {
    if (!stopping) {
      log(`${name} exited (${signal ?? code}); stopping the stack`);
      void shutdown(1);
    }
  });
  children.push({ name, process: child });
  return child;
}

async function shutdown(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  log('stopping...');
  await Promise.all(children.map((c) => stopProcess(c.process)));
  await devServer?.stop();
  log('stopped');
  process.exit(code);
}

async function main(): Promise<void> {
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));
  mkdirSync(dataDir, { recursive: true });

  const cli = await ensureTemporalCli((l) => log(l));
  log('starting the Temporal dev server...');
  devServer = await startDevServer({ cli, port: TEMPORAL_PORT, uiPort: TEMPORAL_UI_PORT, dbFilename: join(dataDir, 'temporal.db') });

  runService('simulator', 'simulator/main.ts', {
    SIMULATOR_AUTO_ADVANCE_MS: process.env.SIMULATOR_AUTO_ADVANCE_MS ?? '5000',
  });

  log('');
  log('the local stack is up:');
  log(`  Temporal         ${devServer.address} (namespace ${devServer.namespace})`);
  log(`  Temporal Web UI  ${devServer.uiUrl}`);
  log(`  provider sandbox ${SIMULATOR_URL} (API key: sandbox-key; dashboard ${SIMULATOR_URL}/_sim)`);
  log('try:');
  log(`  curl -s -H 'Authorization: Bearer sandbox-key' ${SIMULATOR_URL}/v1/health/token`);
  log('Ctrl-C stops everything; data stays in .data/');
}

main().catch(async (err: Error) => {
  console.error(`[start] ${err.message}`);
  await shutdown(1);
});
