/** npm run bench -- accounts (issue #36): docs/benchmarks.md, "Many courier accounts". */
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { temporal as proto } from '@temporalio/proto';
import { tsToMs } from '@temporalio/common/lib/time';
import { gateTaskQueue } from '../contract/task-queues';
import { deliveryWorkflowId } from '../contract/workflow-ids';
import { keyFingerprint } from '../simulator/auth';
import type { Simulator } from '../simulator/server';
import { trailingWindowSeries } from './charts';
import { leastDrainMs, round } from './limits-figures';
import { LIMITS, makeOrders, QUIET_MS, SCALE, startOrders, startWorkers, waitCreated, type Context } from './limits';
import { benchSettings, cpuMeter, percentile, processMemoryMiB, progressLog, shuffled, sleep, type BenchmarkOutput } from './measure';
import { histories, rateLimitsEnv, withBenchStack } from './temporal';

const { num } = benchSettings('ACCOUNTS');
const SMALL = num('SMALL', 99);
const BIG_ORDERS = num('BIG_ORDERS', 300);
const REGISTERED = num('REGISTERED', 10_000);
const REVOKED_MS = num('REVOKED_S', 20) * 1000;
const IDLE_MS = num('IDLE_S', 30) * 1000;
/** 0: the dev server without task-queue fairness, to measure what the account as fairness key changes. */
const FAIRNESS = num('FAIRNESS', 1) > 0;
const progress = progressLog('accounts');
const load = () => loadavg().map((l) => l.toFixed(1)).join(' ');

type Env = { ctx: Context; sim: Simulator; url: string; dir: string };
type Order = ReturnType<typeof makeOrders>[number] & { account: string };

/** Written aside and renamed: the registry never reads half a file. */
function write(dir: string, name: string, text: string): string {
  writeFileSync(join(dir, `${name}.tmp`), text);
  renameSync(join(dir, `${name}.tmp`), join(dir, name));
  return join(dir, name);
}

/** The registry file: every account on the simulator, at the scaled limits; idle accounts share one key file. */
const registry = (e: Env, name: string, ids: string[]) => write(e.dir, name, JSON.stringify({ accounts: ids.map((id) => ({ id, baseUrl: e.url, apiKey: { file: id.startsWith('idle-') ? 'idle.key' : `${id}.key` }, limits: rateLimitsEnv(LIMITS) })) }));

/** Accounts as their holders set them up at the courier, each with a key of its own, and the key files the registry points to. */
function register(e: Env, ids: string[]): void {
  for (const id of ids) {
    e.sim.context.registerAccount(id, { key: `key-${id}`, webhook: null });
    write(e.dir, `${id}.key`, `key-${id}`);
  }
}

/** Every account's orders together, shuffled. */
const startAll = (e: Env, taskQueue: string, orders: Order[]) => startOrders(e.ctx, taskQueue, shuffled(orders), { concurrency: 64, followUp: { quietMs: QUIET_MS } });

/** The highest share of its limit any key used in any rolling window, quotes and creations, from the simulator's request log. */
function windowUse(sim: Simulator): number {
  const use = (['quotes', 'creations'] as const).flatMap((family) => {
    const byKey = new Map<string, number[]>();
    for (const c of sim.requestLog()) if (c.method === 'POST' && c.path === `/v1/${family === 'quotes' ? 'quotes' : 'deliveries'}` && c.status < 300) byKey.set(c.key_fingerprint!, [...(byKey.get(c.key_fingerprint!) ?? []), Date.parse(c.time)]);
    return [...byKey.values()].flatMap((times) => trailingWindowSeries('', times, LIMITS[family].windowMs).points.map(([, n]) => n / LIMITS[family].limit));
  });
  return Math.max(...use);
}

async function runPhase(e: Env) {
  const ids = ['big', ...Array.from({ length: SMALL }, (_, i) => `small-${i + 1}`)];
  const revoked = ids.at(-1)!;
  register(e, ids);
  const workers = await startWorkers(e.ctx, { taskQueue: 'accounts-run', url: e.url, key: 'none', pacing: 'gate', env: () => ({ DELIVERY_ACCOUNTS_FILE: registry(e, 'run.json', ids) }) });
  const orders: Order[] = ids.flatMap((account) => makeOrders(account, account === 'big' ? BIG_ORDERS : 2).map((o) => ({ ...o, account })));
  const big = orders.filter((o) => o.account === 'big');
  const least = leastDrainMs(big, LIMITS.quotes, LIMITS.creations);
  progress(`run: ${orders.length} orders in ${ids.length} accounts, ${revoked}'s key revoked; the big account's least drain ${(least / 1000).toFixed(1)} s; load ${load()}`);
  e.sim.context.registerAccount(revoked, { key: `key-${revoked}-new`, webhook: null }); // its key file's key is now refused
  const startedAt = await startAll(e, 'accounts-run', orders);
  const refused = () => e.sim.requestLog().filter((c) => c.status === 401 && c.key_fingerprint === keyFingerprint(`key-${revoked}`));
  // Corrected REVOKED_S after the courier first refused the key: the account is paused that long.
  const corrected = (async () => {
    while (!refused().length) await sleep(100);
    await sleep(REVOKED_MS);
    write(e.dir, `${revoked}.key`, `key-${revoked}-new`);
    progress(`run: ${revoked}'s key corrected after ${refused().length} refused call(s)`);
    return Date.now();
  })();
  const createdAt = await waitCreated(e.sim, orders, Date.now() + 3 * least + 60_000, 'run');
  const correctedAt = await corrected;
  await Promise.all(workers.map((w) => w.stop()));
  const waits = (os: Order[], from: (o: Order) => number) => os.map((o) => (createdAt.get(o.reference) ?? Infinity) - from(o)).sort((a, b) => a - b);
  const smallOrders = orders.filter((o) => o.account !== 'big' && o.account !== revoked);
  const small = waits(smallOrders, (o) => startedAt.get(o.reference)!);
  // Where a small order's wait is: from its delivery's start until a worker took its first workflow task (server time).
  const firstTask = (h: Awaited<ReturnType<typeof histories>>) => tsToMs(h.find((ev) => ev.workflowTaskStartedEventAttributes)!.eventTime) - tsToMs(h[0]!.eventTime);
  const firstTasks = (await Promise.all(smallOrders.map(async (o) => firstTask(await histories(e.ctx.temporal, deliveryWorkflowId(o.reference, o.account)))))).sort((a, b) => a - b);
  const starts = [...startedAt.values()];
  const bigStart = Math.min(...big.map((o) => startedAt.get(o.reference)!));
  const bigDrain = waits(big, () => bigStart).at(-1)!;
  return {
    run_starts_spread_s: round((Math.max(...starts) - Math.min(...starts)) / 1000, 2),
    // The stack's own latency under the machine's load: the first creation of any account after the first start.
    first_created_s: round((Math.min(...createdAt.values()) - Math.min(...starts)) / 1000, 2),
    small_orders_measured: small.length, small_created_p50_s: round(percentile(small, 0.5) / 1000, 2), small_created_p99_s: round(percentile(small, 0.99) / 1000, 2),
    small_first_task_wait_p50_s: round(percentile(firstTasks, 0.5) / 1000, 2), small_first_task_wait_p99_s: round(percentile(firstTasks, 0.99) / 1000, 2),
    big_least_drain_s: round(least / 1000, 1), big_drain_s: round(bigDrain / 1000, 1), big_drain_ratio: round(bigDrain / least),
    max_window_use_of_limit: round(windowUse(e.sim)), refused_429: e.sim.requestLog().filter((c) => c.status === 429).length, revoked_refused_401: refused().length,
    revoked_created_after_correction_max_s: round(waits(orders.filter((o) => o.account === revoked), () => correctedAt).at(-1)! / 1000, 1),
    run_load_average_end: load(),
  };
}

async function idlePhase(e: Env) {
  const busy = Array.from({ length: 10 }, (_, i) => `busy-${i + 1}`);
  register(e, busy);
  write(e.dir, 'idle.key', 'key-idle');
  const [worker] = await startWorkers(e.ctx, { taskQueue: 'accounts-idle', url: e.url, key: 'none', pacing: 'gate', count: 1, env: () => ({ DELIVERY_ACCOUNTS_FILE: registry(e, 'idle.json', busy) }) });
  const orders: Order[] = busy.flatMap((account) => makeOrders(`${account}-idle`, 1).map((o) => ({ ...o, account })));
  await startAll(e, 'accounts-idle', orders);
  await waitCreated(e.sim, orders, Date.now() + 60_000, 'idle');
  await sleep(5_000);
  const rssFew = processMemoryMiB(worker!.pid)!.rss;
  const writtenAt = Date.now();
  registry(e, 'idle.json', [...busy, ...Array.from({ length: REGISTERED - busy.length }, (_, i) => `idle-${i + 1}`)]);
  let reloaded: string | undefined;
  while (!(reloaded = /"time":"([^"]+)","level":"INFO","msg":"account registry reloaded"/.exec(worker!.output())?.[1]) && Date.now() < writtenAt + 30_000) await sleep(20);
  await sleep(5_000);
  progress(`idle: ${REGISTERED} accounts registered, ${busy.length} of them with deliveries; measuring the worker for ${IDLE_MS / 1000} s; load ${load()}`);
  const idleFrom = Date.now();
  const cpu = cpuMeter({ worker: worker!.pid });
  await cpu.span(() => sleep(IDLE_MS));
  const rssMany = processMemoryMiB(worker!.pid)!.rss;
  const gates: string[] = [];
  for await (const w of e.ctx.temporal.workflow.list({ query: `TaskQueue = '${gateTaskQueue('accounts-idle')}'` })) gates.push(w.workflowId);
  let timers = 0;
  for (const id of gates) timers += (await histories(e.ctx.temporal, id)).filter((ev) => ev.eventType === proto.api.enums.v1.EventType.EVENT_TYPE_TIMER_FIRED && tsToMs(ev.eventTime) >= idleFrom).length;
  await worker!.stop();
  return {
    registry_reload_s: reloaded ? round((Date.parse(reloaded) - writtenAt) / 1000, 2) : NaN, idle_worker_cpu_cores: round(cpu.seconds.worker / cpu.seconds.wall, 4),
    worker_rss_mib_10: round(rssFew, 1), [`worker_rss_mib_${REGISTERED}`]: round(rssMany, 1), rss_growth_kib_per_account: round(((rssMany - rssFew) * 1024) / (REGISTERED - busy.length), 2),
    gates_running: gates.length, gates_of_idle_accounts: gates.filter((id) => id.includes('@idle-')).length, gate_timers_fired_while_idle: timers, idle_load_average_end: load(),
  };
}

export async function accountsBenchmark(): Promise<BenchmarkOutput> {
  return withBenchStack(progress, num('TIME_LIMIT_MIN', 30) * 60_000, { server: { dynamicConfig: FAIRNESS ? {} : { 'matching.enableFairness': false } } }, async (stack) => {
    const { sim, url } = await stack.simulator({ timeScale: SCALE });
    const dir = mkdtempSync(join(tmpdir(), 'bench-accounts-'));
    stack.cleanup.add(() => rmSync(dir, { recursive: true, force: true }));
    const e: Env = { ctx: { stack, temporal: await stack.client(), bundle: await stack.bundle() }, sim, url, dir };
    const f = { scale: SCALE, fairness: FAIRNESS ? 'on' : 'off', accounts: SMALL + 1, big_orders: BIG_ORDERS, registered: REGISTERED, load_average_start: load(), ...(await runPhase(e)), ...(await idlePhase(e)) };
    const goals = { small_p99_5s: f.small_created_p99_s <= 5, big_drain_1_05: f.big_drain_ratio <= 1.05, windows: f.max_window_use_of_limit <= 1, no_429: f.refused_429 === 0, revoked_60s: f.revoked_created_after_correction_max_s <= 60,
      idle_cpu: f.idle_worker_cpu_cores <= 0.05, rss_64kib: f.rss_growth_kib_per_account <= 64, reload_1s: f.registry_reload_s <= 1, no_idle_timers: f.gates_of_idle_accounts + f.gate_timers_fired_while_idle === 0 };
    return { ...f, goals_not_met: Object.entries(goals).filter(([, ok]) => !ok).map(([g]) => g).join(' ') || 'none' };
  });
}
