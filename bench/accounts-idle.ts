/**
 * The idle half of `npm run bench -- accounts` (bench/accounts.ts): 10,000 registered accounts,
 * 10 of them with deliveries. What the worker costs at rest (CPU; RSS as the median of many
 * samples, with their spread), what an account costs in memory (heap used after a forced
 * collection, in this process, for the registry and the metrics' labels of 10 and of 10,000
 * accounts), how many series the worker's two /metrics and the fleet view's carry, and the fleet
 * view's visibility queries and pass time with deliveries open in 100 accounts.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { temporal as proto } from '@temporalio/proto';
import { accountRegistryFromEnv } from '../accounts/registry';
import { gateTaskQueue } from '../contract/task-queues';
import { DeliveryAccount, DeliveryStatus, DeliveryStatusSince } from '../contract/search-attributes';
import { FleetView } from '../fleet/view';
import { WorkerMetrics } from '../metrics/worker-metrics';
import { registryTargets } from '../notifications/targets';
import { freePort } from '../scripts/temporal-dev-server';
import { parsePrometheusText } from '../test/helpers/prometheus';
import { makeOrders, startOrders, QUIET_MS, startWorkers, waitCreated, type Context } from './limits';
import { round } from './limits-figures';
import { cpuMeter, percentile, pool, processMemoryMiB, sleep } from './measure';
import { histories } from './temporal';
import type { Simulator } from '../simulator/server';

export type IdleEnv = { ctx: Context; sim: Simulator; url: string; dir: string; write: (name: string, text: string) => string; register: (ids: string[]) => void; registry: (name: string, ids: string[]) => string };

const BUSY = Array.from({ length: 10 }, (_, i) => `busy-${i + 1}`);
const idleIds = (registered: number) => [...BUSY, ...Array.from({ length: registered - BUSY.length }, (_, i) => `idle-${i + 1}`)];

/** Median and spread (least, most) of samples, rounded, as `<name>_median`, `_min`, `_max`, `_n`. */
function spread(name: string, samples: number[], digits = 1): Record<string, number> {
  const s = [...samples].sort((a, b) => a - b);
  return { [`${name}_median`]: round(percentile(s, 0.5, 6), digits), [`${name}_min`]: round(s[0]!, digits), [`${name}_max`]: round(s.at(-1)!, digits), [`${name}_n`]: s.length };
}

/** The worker's RSS every 250 ms for `ms` (MiB). */
async function rssSamples(pid: number, ms: number): Promise<number[]> {
  const out: number[] = [];
  for (const end = Date.now() + ms; Date.now() < end; await sleep(250)) out.push(processMemoryMiB(pid)!.rss);
  return out;
}

/** Heap used after a forced full collection, in this process (MiB): `gc` made callable through V8's public flag API. */
function heapAfterGc(): number {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  gc();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

/** Heap used by the registry, the worker's metrics and the fleet view's labels of `n` accounts, after a forced collection, 5 times. */
function heapPerAccount(e: IdleEnv, registered: number): Record<string, number> {
  const per: number[] = [];
  for (let round_ = 0; round_ < 5; round_++) {
    const held: unknown[] = [];
    const build = (ids: string[]) => {
      const registry = accountRegistryFromEnv({ DELIVERY_ACCOUNTS_FILE: e.registry(`heap-${ids.length}.json`, ids) }, { watch: false });
      const metrics = new WorkerMetrics({ ids: () => registry.ids(), endpointsOf: (id) => registryTargets(registry).names(id) });
      held.push(registry, metrics);
    };
    const before = heapAfterGc();
    build(idleIds(BUSY.length));
    const few = heapAfterGc();
    build(idleIds(registered));
    const many = heapAfterGc();
    per.push(((many - few - (few - before)) * 1024) / (registered - BUSY.length));
    held.length = 0;
  }
  return spread('heap_after_gc_kib_per_account', per, 2);
}

/** Samples in a /metrics text. */
async function seriesOf(url: string): Promise<number> {
  return parsePrometheusText(await (await fetch(url)).text()).samples.length;
}

/** The fleet view with `registered` accounts in its registry and open deliveries in 100 of them (on a queue no worker polls). */
async function fleetPhase(e: IdleEnv, registered: number) {
  const taskQueue = `accounts-fleet-${Date.now().toString(36)}`;
  const ids = idleIds(registered);
  const statuses = ['CREATED', 'ASSIGNED', 'PICKED_UP'];
  const open = Array.from({ length: 1_000 }, (_, i) => ({ i, account: ids[(i * 97) % Math.min(100, ids.length)]!, status: i % 10 === 0 ? undefined : statuses[i % 3]! }));
  await pool(open, 32, async ({ i, account, status }) => {
    const attributes = [{ key: DeliveryAccount, value: account }, ...(status ? [{ key: DeliveryStatus, value: status }, { key: DeliveryStatusSince, value: new Date(Date.now() - i * 1000) }] : [])];
    await e.ctx.temporal.workflow.start('delivery', { taskQueue, workflowId: `fleet-${taskQueue}-${i}`, args: [], typedSearchAttributes: attributes as never });
  });
  const view = new FleetView({ client: e.ctx.temporal, namespace: e.ctx.stack.server.namespace, taskQueue, periodMs: 60_000, accounts: () => ids });
  const queries = async () => parsePrometheusText(await view.registry.metrics()).sum('delivery_fleet_visibility_queries_total');
  const passMs: number[] = [];
  const perPass: number[] = [];
  for (let n = 0; n < 5; n++) {
    const [q, t] = [await queries(), performance.now()];
    await view.poll();
    passMs.push(performance.now() - t);
    perPass.push((await queries()) - q);
  }
  const text = await view.registry.metrics();
  await Promise.all(open.map(({ i }) => e.ctx.temporal.workflow.getHandle(`fleet-${taskQueue}-${i}`).terminate('bench over').catch(() => undefined)));
  return { fleet_open_deliveries: open.length, fleet_accounts_with_open: 100, fleet_queries_per_pass: perPass.join('/'), ...spread('fleet_pass_ms', passMs, 0), fleet_series: parsePrometheusText(text).samples.length };
}

export async function idlePhase(e: IdleEnv, registered: number, idleMs: number) {
  e.register(BUSY);
  e.write('idle.key', 'key-idle');
  const [own, sdk] = [await freePort(), await freePort()];
  const [worker] = await startWorkers(e.ctx, { taskQueue: 'accounts-idle', url: e.url, key: 'none', pacing: 'gate', count: 1, env: () => ({ DELIVERY_ACCOUNTS_FILE: e.registry('idle.json', BUSY), WORKER_DELIVERY_METRICS_ADDRESS: `127.0.0.1:${own}`, WORKER_METRICS_ADDRESS: `127.0.0.1:${sdk}` }) });
  const orders = BUSY.flatMap((account) => makeOrders(`${account}-idle`, 1).map((o) => ({ ...o, account })));
  await startOrders(e.ctx, 'accounts-idle', orders, { concurrency: 64, followUp: { quietMs: QUIET_MS } });
  await waitCreated(e.sim, orders, Date.now() + 60_000, 'idle');
  await sleep(5_000);
  const rssFew = await rssSamples(worker!.pid!, idleMs / 2);
  const seriesFew = { own: await seriesOf(`http://127.0.0.1:${own}/metrics`), sdk: await seriesOf(`http://127.0.0.1:${sdk}/metrics`) };
  const writtenAt = Date.now();
  e.registry('idle.json', idleIds(registered));
  let reloaded: string | undefined;
  while (!(reloaded = /"time":"([^"]+)","level":"INFO","msg":"account registry reloaded"/.exec(worker!.output())?.[1]) && Date.now() < writtenAt + 30_000) await sleep(20);
  await sleep(5_000);
  const idleFrom = Date.now();
  const cpu = cpuMeter({ worker: worker!.pid });
  const rssMany = await cpu.span(() => rssSamples(worker!.pid!, idleMs));
  const seriesMany = { own: await seriesOf(`http://127.0.0.1:${own}/metrics`), sdk: await seriesOf(`http://127.0.0.1:${sdk}/metrics`) };
  const gates: string[] = [];
  for await (const w of e.ctx.temporal.workflow.list({ query: `TaskQueue = '${gateTaskQueue('accounts-idle')}'` })) gates.push(w.workflowId);
  let timers = 0;
  for (const id of gates) timers += (await histories(e.ctx.temporal, id)).filter((ev) => ev.eventType === proto.api.enums.v1.EventType.EVENT_TYPE_TIMER_FIRED && Number(ev.eventTime?.seconds ?? 0) * 1000 >= idleFrom).length;
  await worker!.stop();
  const heap = heapPerAccount(e, registered);
  const median = (xs: number[]) => percentile([...xs].sort((a, b) => a - b), 0.5, 6);
  return {
    registry_reload_s: reloaded ? round((Date.parse(reloaded) - writtenAt) / 1000, 2) : NaN, idle_worker_cpu_cores: round(cpu.seconds.worker / cpu.seconds.wall, 4),
    ...spread('worker_rss_mib_10', rssFew), ...spread(`worker_rss_mib_${registered}`, rssMany), rss_median_growth_kib_per_account: round(((median(rssMany) - median(rssFew)) * 1024) / (registered - BUSY.length), 2),
    ...heap, heap_kib_per_account: heap.heap_after_gc_kib_per_account_median!, // the goal's figure
    worker_own_series_10: seriesFew.own, [`worker_own_series_${registered}`]: seriesMany.own, worker_sdk_series_10: seriesFew.sdk, [`worker_sdk_series_${registered}`]: seriesMany.sdk,
    ...(await fleetPhase(e, registered)),
    gates_running: gates.length, gates_of_idle_accounts: gates.filter((id) => id.includes('@idle-')).length, gate_timers_fired_while_idle: timers,
  };
}
