/** npm run bench -- notify (docs/notifications.md): docs/benchmarks.md, "Notifications"; the method: docs/benchmark-methods.md. */
import { setMaxListeners } from 'node:events';
import type { Client } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { DeliveryNotification } from '../contract/delivery-types';
import { freePort } from '../scripts/temporal-dev-server';
import { deliveryRequest } from '../test/fixtures/orders';
import { startReceiver } from '../test/helpers/notify-receiver';
import { FLOOR_TASK_QUEUE } from './floor-workflows';
import { benchSettings, cpuMeter, openLoop, p50p99, pool, prefixed, progressLog, sleep, waitFor, type BenchmarkOutput } from './measure';
import { notifyCharts } from './run-charts';
import { frontendRequests, UNPACED_WORKER_ENV, withBenchStack } from './temporal';

const settings = benchSettings('NOTIFY', 1);
const DELIVERIES = settings.num('DELIVERIES', 1000);
const QUIET_SECONDS = settings.num('QUIET_SECONDS', 30);
const WEBHOOK_RATE = settings.num('WEBHOOK_RATE', 100);
const LATENCY_WEBHOOKS = settings.num('LATENCY_WEBHOOKS', 1000);
const OUTAGE_DELIVERIES = settings.num('OUTAGE_DELIVERIES', 50);
const OUTAGE_SECONDS = settings.num('OUTAGE_SECONDS', 20);
const RETRY_SCHEDULE = '200ms,500ms,1s';
/** A worker killed mid-attempt: the attempt times out (20 s), then Temporal's backoff for timeouts, 5 s × 2^(attempts − 1) up to
 * 10 minutes (workflows/notifier.ts), applies: after ~20 attempts, the 10 minutes. */
const KILL_WAIT_SECONDS = settings.num('KILL_WAIT_SECONDS', 720);
/** A low rate beside the worst case: what the path itself costs, without queueing. */
const LOW_RATE = settings.num('LOW_RATE', 10);
const [TASK_QUEUE, ORDER_QUEUE] = ['bench-notify', 'bench-orders'];
/** How an order system is told: its order workflow's signal, or its HTTP endpoint. */
const PATHS = ['signal', 'http'] as const;
const progress = progressLog('notify');

/** One delivery's notifications as the receiver accepted them, against those its timeline says were made: one never accepted is
 * lost unless its fate at the endpoint is still `pending` (Temporal still retrying it). */
function tally(made: { sequence: number; fate?: string }[], accepted: DeliveryNotification[]) {
  const seen = new Map<number, string>();
  const t = { notifications_made: made.length, lost: 0, still_pending: 0, out_of_sequence: 0, duplicates_of_seen_id: 0, same_sequence_new_id: 0 };
  for (const n of accepted) {
    if (seen.get(n.sequence) === n.eventId) t.duplicates_of_seen_id++;
    else if (seen.has(n.sequence)) t.same_sequence_new_id++;
    else if (n.sequence !== Math.max(0, ...seen.keys()) + 1) t.out_of_sequence++;
    if (!seen.has(n.sequence)) seen.set(n.sequence, n.eventId);
  }
  t.lost = made.filter((m) => !seen.has(m.sequence) && m.fate !== 'pending').length;
  t.still_pending = made.filter((m) => !seen.has(m.sequence) && m.fate === 'pending').length;
  return t;
}

/** How many latencies, and their p50 and p99 (NaN for none). */
const latencyFigures = (name: string, ms: number[]) => ({ [`${name}_samples`]: ms.length, ...p50p99(name, ms) });

/** What an order workflow has `received`, each with when its signal reached its history (the server's time). */
async function receivedAt<T>(temporal: Client, workflowId: string): Promise<[T, number][]> {
  const handle = temporal.workflow.getHandle(workflowId);
  const received = await handle.query<T[]>('received'); // first: the history read after it holds every signal received
  const signalled = (await handle.fetchHistory()).events!.filter((e) => e.workflowExecutionSignaledEventAttributes);
  return received.flatMap((n, j) => (signalled[j] ? [[n, tsToMs(signalled[j].eventTime)] as [T, number]] : []));
}

/** Temporal alone (bench/floor-workflows.ts) at the worst-case rate and shape: `relays` relays told by signal, then by an activity. */
async function floorPhases(temporal: Client, start: () => Promise<{ output(): string }>, count: number, relays: number) {
  const [sent, toldAt] = [new Map<string, number>(), new Map<string, number>()];
  const worker = await start();
  const figures: Record<string, number> = {};
  for (const way of ['signal', 'activity'] as const) {
    const relayIds = Array.from({ length: relays }, (_, i) => `floor-${way}-${i}`);
    await pool(relayIds, 16, async (id) => {
      if (way === 'signal') await temporal.workflow.start('orderFollowing', { taskQueue: ORDER_QUEUE, workflowId: `order:${id}`, args: [] });
      await temporal.workflow.start('relay', { taskQueue: FLOOR_TASK_QUEUE, workflowId: id, args: way === 'signal' ? [`order:${id}`] : [] });
    });
    const keys = Array.from({ length: count }, (_, i) => `${relayIds[i % relays]}#${i}`);
    await openLoop(keys, WEBHOOK_RATE, async (key) => {
      sent.set(key, Date.now());
      // About a notification's size.
      await temporal.workflow.getHandle(key.split('#')[0]!).signal('changed', { key, type: 'floor', filler: 'x'.repeat(1000) });
    });
    const arrivals = async (id: string) => (await receivedAt<{ key: string }>(temporal, `order:${id}`)).map(([c, t]) => [c.key, t] as const);
    const toldByActivity = (key: string) => {
      for (const [, k, t] of worker.output().matchAll(/^floor: told (\S+) (\d+)$/gm)) toldAt.set(k!, Number(t));
      return toldAt.has(key);
    };
    const told = async (key: string) => (way === 'activity' ? toldByActivity(key) : (await arrivals(key.split('#')[0]!)).some(([k]) => k === key));
    for (const deadline = Date.now() + 120_000; Date.now() < deadline && !(await Promise.all(keys.slice(-3).map(told))).every(Boolean); ) await sleep(250);
    if (way === 'signal') await pool(relayIds, 16, async (id) => void (await arrivals(id)).forEach(([k, t]) => toldAt.set(k, t)));
    const ms = keys.flatMap((k) => (toldAt.has(k) ? [toldAt.get(k)! - sent.get(k)!] : []));
    const last = Math.max(...keys.map((k) => toldAt.get(k) ?? -Infinity));
    Object.assign(figures, latencyFigures(`floor_${way}`, ms), { [`floor_${way}_changes_per_second_through`]: Number(((1000 * ms.length) / (last - sent.get(keys[0]!)!)).toFixed(1)) });
  }
  return figures;
}

export async function notifyBenchmark(): Promise<BenchmarkOutput> {
  const metricsUrl = new URL(`http://127.0.0.1:${await freePort()}/metrics`);
  return withBenchStack(progress, 40 * 60_000, { server: { metricsPort: Number(metricsUrl.port) } }, async (stack) => {
    const { server, cleanup } = stack;
    // The order system's endpoint; `down` makes it answer 503. Arrival times by `<deliveryId>:<status>`, first arrival only.
    const receiver = await startReceiver();
    cleanup.add(() => receiver.close());
    let down = false;
    // SIGKILLs the worker when the receiver has accepted this many more: the last one is then answered 204 but never heard by the worker.
    let killAfter = 0;
    const arrived = new Map<string, number>();
    receiver.answer = (n) => {
      if (n.type === 'delivery.status_changed' && !arrived.has(`${n.deliveryId}:${n.change.status}`)) arrived.set(`${n.deliveryId}:${n.change.status}`, Date.now());
      if (!down && killAfter > 0 && --killAfter === 0) process.kill(worker.pid!, 'SIGKILL');
      return down ? 503 : 204;
    };
    progress('bundling the workflows, starting the worker, the bridge and the order worker...');
    const notify = { DELIVERY_NOTIFY_ENDPOINTS: `orders=${receiver.url}`, DELIVERY_NOTIFY_SECRETS: `orders=${receiver.secret}`, DELIVERY_NOTIFY_RETRY_SCHEDULE: RETRY_SCHEDULE };
    const { sim, url: simUrl, env: workerEnv, bridge: { process: bridge }, temporal, deliveries, ...started } = await stack.deliveryStack(TASK_QUEUE, { ...UNPACED_WORKER_ENV, ...notify }); // pace is not what this measures
    let worker = started.worker;

    const orderConnection = await NativeConnection.connect({ address: server.address });
    cleanup.add(() => orderConnection.close());
    const orderWorker = await Worker.create({ connection: orderConnection, namespace: server.namespace, taskQueue: ORDER_QUEUE, workflowsPath: require.resolve('../test/temporal/fixtures/order-workflows') });
    const orderRun = orderWorker.run();
    cleanup.add(() => (orderWorker.shutdown(), orderRun));

    /** Each reference's provider delivery id, once the provider has created it. */
    const created = (references: string[]) => waitFor(`${references.length} deliveries created`, 300_000, 500, async () => {
      const ids = new Map(sim.deliveries().map(({ delivery: d }) => [d.reference_number, d.id]));
      return references.every((r) => ids.has(r)) && references.map((r) => ids.get(r)!);
    });
    const settled = async () => { // until the receiver has heard nothing for 3 s
      for (let n = -1; n !== receiver.requests.length; await sleep(3_000)) n = receiver.requests.length;
    };

    // Part 1: N open deliveries, half told by their order workflow's signal, half by the receiver.
    progress(`starting ${DELIVERIES} deliveries, half told by signal (with their order workflows), half by the endpoint...`);
    const refs = Array.from({ length: DELIVERIES }, (_, i) => `NB-${i}`);
    const bySignal = (i: number) => i % 2 === 0;
    await pool(refs, 16, async (reference, i) => {
      if (bySignal(i)) await temporal.workflow.start('orderFollowing', { taskQueue: ORDER_QUEUE, workflowId: `order:${reference}`, args: [] });
      await deliveries.startDelivery(deliveryRequest(), { reference, notify: bySignal(i) ? { workflowId: `order:${reference}` } : { endpoint: 'orders' } });
    });
    const ids = await created(refs);
    await settled();
    await sleep(5_000); // the signal half's creation notifications too
    // CPU of each of our processes from now to the call, beside the machine's share used by others (bench/measure.ts).
    const meter = () => cpuMeter({ worker: worker.pid, temporal: server.process?.pid, bench_process: process.pid, bridge: bridge.pid }).begin();
    const measureWindow = async (seconds: number) => {
      const [cpu, req0, told0] = [meter(), await frontendRequests(metricsUrl), receiver.requests.length];
      await sleep(seconds * 1000);
      const req1 = await frontendRequests(metricsUrl);
      const perSecond = (ops: string[]) => Number((ops.reduce((sum, op) => sum + (req1[op] ?? 0) - (req0[op] ?? 0), 0) / seconds).toFixed(2));
      return { query_describe_per_second: perSecond(['QueryWorkflow', 'DescribeWorkflowExecution']), frontend_requests_per_second: perSecond(Object.keys(req1)), notifications_sent: receiver.requests.length - told0, ...cpu() };
    };
    progress(`quiet window of ${QUIET_SECONDS} s: ${DELIVERIES} deliveries followed by order workflows and the receiver...`);
    const quiet = await measureWindow(QUIET_SECONDS);
    progress(`the same ${DELIVERIES} deliveries followed by watch (500 ms) in this process for ${QUIET_SECONDS} s...`);
    const stop = new AbortController();
    setMaxListeners(DELIVERIES + 10, stop.signal);
    // What watch costs is the figure, not what it yields. A call that fails (a query times out when the worker is too busy) is counted, and the watcher starts again.
    const watchOne = async (r: string) => { for await (const _ of deliveries.watch(r, { intervalMs: 500, signal: stop.signal })); };
    let failed = 0;
    const watching = Promise.all(refs.map(async (r) => { while (!stop.signal.aborted) await watchOne(r).catch(() => failed++); }));
    await sleep(3_000); // every watcher past its first round
    failed = 0;
    const watched = { ...(await measureWindow(QUIET_SECONDS)), failed_watch_calls: failed };
    stop.abort();
    await watching;

    // Part 2: the simulator's status change (advance() sends the webhook) → the order system, open loop, at the worst-case rate,
    // then at a low one; where each path's latency ends: docs/benchmark-methods.md, "Notifications".
    const orderOf = new Map(refs.flatMap((r, i) => (bySignal(i) ? [[ids[i]!, `order:${r}`] as const] : [])));
    const told = async (key: string): Promise<boolean> => {
      const [id, status] = key.split(':') as [string, string];
      if (!orderOf.has(id)) return arrived.has(key);
      const received = await temporal.workflow.getHandle(orderOf.get(id)!).query<DeliveryNotification[]>('received');
      return received.some((n) => n.type === 'delivery.status_changed' && n.change.status === status);
    };
    const changed = new Map<string, { t0: number; phase: 'worst' | 'low' }>();
    const latencyCpu: Record<string, Record<string, number>> = {};
    for (const [phase, rate] of [['worst', WEBHOOK_RATE], ['low', LOW_RATE]] as const) {
      for (const path of PATHS) {
        const targets = ids.filter((_, i) => bySignal(i) === (path === 'signal'));
        const count = phase === 'worst' ? Math.min(LATENCY_WEBHOOKS, 2 * targets.length) : Math.min(rate * 10, targets.length); // ASSIGNED, UPCOMING; then PICKED_UP
        progress(`latency, ${path} path: ${count} status changes at ${rate}/s, one webhook each...`);
        const [cpu, started, keys] = [meter(), performance.now(), [] as string[]];
        await openLoop(Array.from({ length: count }, (_, i) => targets[i % targets.length]!), rate, async (id) => {
          const t0 = Date.now();
          const key = `${id}:${sim.advance(id).status}`;
          changed.set(key, { t0, phase });
          keys.push(key);
        });
        // Done when the last few changes sent have been told (changes queue in order), or after the bound.
        for (const deadline = Date.now() + 120_000; Date.now() < deadline && !(await Promise.all(keys.slice(-3).map(told))).every(Boolean); ) await sleep(250);
        // Through: changes over the time from the first one to the last told; CPU per change of the worker and the dev server.
        const [used, seconds] = [cpu(), (performance.now() - started) / 1000];
        const perChange = (pct: number) => Number(((pct * seconds * 10) / count).toFixed(1));
        latencyCpu[`${phase}_${path}`] = { ...used, changes_per_second_through: Number((count / seconds).toFixed(1)), worker_cpu_ms_per_change: perChange(used.cpu_pct_worker), temporal_cpu_ms_per_change: perChange(used.cpu_pct_temporal) };
      }
    }
    // Each sample: [when the change was sent (epoch ms), its latency (ms)].
    const latency = { worst: { http: [] as [number, number][], signal: [] as [number, number][] }, low: { http: [] as [number, number][], signal: [] as [number, number][] } };
    for (const [k, { t0, phase }] of changed) if (arrived.has(k)) latency[phase].http.push([t0, arrived.get(k)! - t0]);
    await pool(refs.filter((_, i) => bySignal(i)), 16, async (reference) => {
      for (const [n, t] of await receivedAt<DeliveryNotification>(temporal, `order:${reference}`)) {
        const change = n.type === 'delivery.status_changed' ? changed.get(`${n.deliveryId}:${n.change.status}`) : undefined;
        if (change) latency[change.phase].signal.push([change.t0, t - change.t0]);
      }
    });
    progress(`Temporal's floor: the same changes through relays with no code of ours, by signal, then by an activity...`);
    const startFloor = () => stack.processes.start({ name: 'floor', entry: 'bench/floor-worker.ts', ready: /^floor: ready/m, env: stack.env(simUrl), isolated: true, logFile: true }).then((p) => (cleanup.add(() => p.removeLog()), p));
    const floor = await floorPhases(temporal, startFloor, Math.min(LATENCY_WEBHOOKS, DELIVERIES), DELIVERIES / 2);

    // Part 3: the receiver down while deliveries advance to the end, then back; again with the worker killed while it sends.
    const outage = async (label: string, kill: boolean) => {
      const outageRefs = Array.from({ length: OUTAGE_DELIVERIES }, (_, i) => `${label}-${i}`);
      progress(`${label}: ${OUTAGE_DELIVERIES} deliveries, receiver down for ${OUTAGE_SECONDS} s while they go to DELIVERED${kill ? ', worker SIGKILLed while it sends the backlog' : ''}...`);
      await pool(outageRefs, 16, async (reference) => {
        await deliveries.startDelivery(deliveryRequest(), { reference, notify: { endpoint: 'orders' }, followUp: { endGraceMs: 0 } });
      });
      const outageIds = await created(outageRefs);
      const refused0 = receiver.requests.filter((r) => r.answered === 503).length;
      down = true;
      const t0 = Date.now();
      const steps = [0, 1, 2, 3, 4].flatMap(() => outageIds); // one destination: 5 steps to DELIVERED
      await openLoop(steps, steps.length / (OUTAGE_SECONDS * 0.8), async (id) => void sim.advance(id));
      await sleep(Math.max(0, t0 + OUTAGE_SECONDS * 1000 - Date.now()));
      const up = Date.now();
      down = false;
      if (kill) {
        killAfter = 2 * OUTAGE_DELIVERIES;
        await Promise.race([worker.exited, sleep(60_000)]);
        if (worker.running) throw new Error(`${label}: the receiver did not accept ${2 * OUTAGE_DELIVERIES} requests within 60 s of coming back`);
        worker = await stack.start('worker', simUrl, workerEnv);
      }
      // Done when the receiver has accepted every delivery's last notification (delivery.ended; the workflow then closes), or after the bound.
      const open = () => outageRefs.length - new Set(receiver.accepted().flatMap((n) => (n.type === 'delivery.ended' && outageRefs.includes(n.reference) ? [n.reference] : []))).size;
      for (const deadline = Date.now() + (kill ? KILL_WAIT_SECONDS : 240) * 1000; open() > 0 && Date.now() < deadline; ) await sleep(500);
      const sum: Record<string, number> = { not_ended: open(), all_ended_after_back_ms: open() ? NaN : Date.now() - up, attempts_refused_503: receiver.requests.filter((r) => r.answered === 503).length - refused0 };
      await pool(outageRefs, 8, async (reference) => {
        const made = (await deliveries.getStatus(reference)).timeline.flatMap((e) => (e.notification ? [{ sequence: e.notification.sequence, fate: e.notification.to['endpoint:orders'] }] : []));
        for (const [k, v] of Object.entries(tally(made, receiver.accepted().filter((n) => n.reference === reference)))) sum[k] = (sum[k] ?? 0) + v;
      });
      return prefixed(kill ? 'outage_kill' : 'outage', sum);
    };
    await settled();
    const plain = await outage('OUT', false);
    const withKill = await outage('KILL', true);

    // A rate's latencies and CPU, each path's: `<prefix>signal_p50_ms`, `<prefix>http_phase_cpu_pct_worker`, ...
    const rateFigures = (phase: 'worst' | 'low', prefix: string) => {
      const latencies = PATHS.map((path) => latencyFigures(`${prefix}${path}`, latency[phase][path].map((x) => x[1])));
      return Object.assign({}, ...latencies, ...PATHS.map((path) => prefixed(`${prefix}${path}_phase`, latencyCpu[`${phase}_${path}`]!))) as Record<string, number>;
    };
    const figures = {
      ...{ deliveries: DELIVERIES, window_seconds: QUIET_SECONDS, webhook_rate_per_second: WEBHOOK_RATE, low_rate_per_second: LOW_RATE },
      ...prefixed('quiet', quiet),
      ...prefixed('watch', watched),
      ...rateFigures('worst', ''),
      ...floor,
      ...rateFigures('low', 'low_rate_'),
      ...{ retry_schedule: RETRY_SCHEDULE, outage_deliveries: OUTAGE_DELIVERIES, outage_seconds: OUTAGE_SECONDS },
      ...plain,
      ...withKill, // the same figures with the worker SIGKILLed
      receiver_unverified: receiver.unverified,
    };
    return { figures, charts: notifyCharts({ latency, rates: [WEBHOOK_RATE, LOW_RATE], cpu: { title: `${DELIVERIES} open deliveries, nothing changing: CPU over ${QUIET_SECONDS} s`, told: quiet, watched } }) };
  });
}
