/**
 * Jaeger (all-in-one, v2: an OpenTelemetry collector with Jaeger's in-memory storage and query
 * API), the OTLP receiver of the tracing test (test/temporal/tracing.test.ts) and of a local look
 * at traces. Found in the cache or built with Go once, the way scripts/cluster/tools.ts builds the
 * Temporal server: github.com/jaegertracing/jaeger v1.76.0 (Jaeger v2.13.0's Go module version)
 * into $TEMPORAL_CLI_CACHE_DIR/jaeger-v1.76.0 (default ~/.cache/delivery-orchestrator).
 * Its go.mod has a replace directive, so `go install pkg@version` refuses it: the module is
 * downloaded and `go build` runs inside it. JAEGER_BIN names a jaeger binary built elsewhere.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isExecutable, toolCacheBase } from './temporal-cli';
import { findGo, goBuild, goModuleDir, withLock } from './cluster/tools';
import { freePort, stopProcess } from './temporal-dev-server';

export const JAEGER_MODULE_VERSION = 'v1.76.0';
const JAEGER_MODULE = 'github.com/jaegertracing/jaeger';

type Log = (line: string) => void;

export function jaegerPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.JAEGER_BIN ?? join(toolCacheBase(env), `jaeger-${JAEGER_MODULE_VERSION}`, 'jaeger');
}

/** The binary if it is here already, without building anything. */
export function findJaeger(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const bin = jaegerPath(env);
  return isExecutable(bin) ? bin : undefined;
}

/** Returns the jaeger binary, building it with Go into the cache when missing (minutes, the first time). */
export async function ensureJaeger(log: Log = (l) => console.error(l), env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const bin = jaegerPath(env);
  if (isExecutable(bin)) return bin;
  if (env.JAEGER_BIN) throw new Error(`JAEGER_BIN=${env.JAEGER_BIN} is not an executable file`);
  const go = findGo(env);
  if (!go) throw new Error(`Jaeger is not built yet and Go is not installed to build it: install Go 1.24 or later (this project then builds ${JAEGER_MODULE} ${JAEGER_MODULE_VERSION}), or set JAEGER_BIN.`);
  const dir = join(bin, '..');
  await withLock(dir, log, async () => {
    if (existsSync(bin)) return;
    const moduleDir = goModuleDir(go, `${JAEGER_MODULE}@${JAEGER_MODULE_VERSION}`, env);
    await goBuild(go, dir, { args: (staging) => ['build', '-trimpath', '-o', join(staging, 'jaeger'), './cmd/jaeger'], cwd: moduleDir, what: `${JAEGER_MODULE}/cmd/jaeger@${JAEGER_MODULE_VERSION}` }, { jaeger: 'jaeger' }, env, log);
  });
  return bin;
}

export interface RunningJaeger {
  /** OTLP/HTTP base URL, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  otlpUrl: string;
  /** The query API and UI (…/api/traces/<id>, …/search). */
  queryUrl: string;
  output(): string;
  stop(): Promise<void>;
}

/**
 * One Jaeger on loopback ports of its own: OTLP over HTTP in, spans kept in memory, the query API
 * out (no gRPC receiver, no self-tracing, no metrics port). Ready when the query API answers.
 * `ports`: fixed ones (a local stack's, scripts/observe.ts), else free ones.
 * `idle`: at the kernel's idle scheduling priority (`chrt --idle 0`), running only on CPU nothing
 * else wants, as a backend on other machines would take none from the processes it serves.
 */
export async function startJaeger(bin: string, o: { timeoutMs?: number; idle?: boolean; ports?: { otlp: number; query: number } } = {}): Promise<RunningJaeger> {
  const timeoutMs = o.timeoutMs ?? 60_000;
  const [otlp, query, queryGrpc] = [o.ports?.otlp ?? (await freePort()), o.ports?.query ?? (await freePort()), await freePort()];
  const dir = mkdtempSync(join(tmpdir(), 'jaeger-'));
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces: { receivers: [otlp], exporters: [jaeger_storage_exporter] }
  telemetry: { metrics: { level: none }, logs: { level: warn } }
extensions:
  jaeger_storage: { backends: { memstore: { memory: { max_traces: 100000 } } } }
  jaeger_query:
    storage: { traces: memstore }
    enable_tracing: false
    http: { endpoint: "127.0.0.1:${query}" }
    grpc: { endpoint: "127.0.0.1:${queryGrpc}" }
receivers:
  otlp: { protocols: { http: { endpoint: "127.0.0.1:${otlp}" } } }
exporters:
  jaeger_storage_exporter: { trace_storage: memstore }
`,
  );
  const [command, args] = o.idle ? ['chrt', ['--idle', '0', bin, '--config', `file:${config}`]] : [bin, ['--config', `file:${config}`]];
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] }); // chrt runs Jaeger in its own place: the same pid
  let out = '';
  const keep = (chunk: Buffer) => void (out = (out + chunk.toString()).slice(-100_000));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  let spawnError: Error | undefined; // `chrt` missing, say: the loop below reports it
  child.once('error', (err) => void (spawnError = err));
  const running: RunningJaeger = {
    otlpUrl: `http://127.0.0.1:${otlp}`,
    queryUrl: `http://127.0.0.1:${query}`,
    output: () => out,
    stop: async () => {
      await stopProcess(child, 5_000);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (spawnError) throw new Error(`could not start ${command}: ${spawnError.message}`);
    if (child.exitCode !== null) throw new Error(`jaeger exited (${child.exitCode}):\n${out.slice(-4_000)}`);
    const ok = await fetch(`${running.queryUrl}/api/services`).then((r) => r.ok, () => false);
    if (ok) return running;
    if (Date.now() > deadline) {
      await running.stop();
      throw new Error(`jaeger did not answer within ${timeoutMs} ms:\n${out.slice(-4_000)}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

if (require.main === module) {
  ensureJaeger()
    .then((bin) => console.log(`${bin}\n(npm start -- --observe runs it; docs/monitoring.md, "A delivery's trace in three steps")`))
    .catch((err: Error) => {
      console.error(err.message);
      process.exit(1);
    });
}
