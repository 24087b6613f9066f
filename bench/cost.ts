/** npm run bench -- cost: docs/benchmarks.md, "What a delivery costs"; the counting rules: docs/benchmark-methods.md. */
import { temporal } from '@temporalio/proto';
import type { DeliveryResult } from '../contract/delivery-types';
import { deliveryRank } from '../provider/lifecycle';
import { gateWorkflowId } from '../contract/workflow-ids';
import { deliveryRequest } from '../test/fixtures/orders';
import { startReceiver } from '../test/helpers/notify-receiver';
import { barChart } from './charts';
import { benchSettings, cpuMeter, pool, progressLog, type BenchmarkOutput } from './measure';
import { histories, withBenchStack } from './temporal';

const settings = benchSettings('COST');
const DELIVERIES = settings.num('DELIVERIES', 10);
const STOPS = (process.env.COST_BENCH_STOPS ?? '3,1,30').split(',').map(Number);
/** The worker's DELIVERY_STATUS_SEARCH for this run (COST_BENCH_STATUS_SEARCH=every: one upsert per status). */
const STATUS_SEARCH = process.env.COST_BENCH_STATUS_SEARCH ?? 'every';
const TASK_QUEUE = 'bench-cost';
const E = temporal.api.enums.v1.EventType;
export const ACTION_TYPES = ['workflow started', 'signal', 'activity attempt', 'local activities', 'timer', 'search attributes', 'update', 'query'] as const;
type ActionType = (typeof ACTION_TYPES)[number];
export type Actions = Record<ActionType, number>;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

const progress = progressLog('cost');

/** Billable actions in one history, by Temporal Cloud's rules (docs/benchmark-methods.md, "What a delivery costs"). */
export function countActions(events: readonly HistoryEvent[], within: (e: HistoryEvent) => boolean = () => true): Actions {
  const a = empty();
  const localTasks = new Set<string>();
  for (const e of events.filter(within)) {
    const counted = COUNTED[e.eventType ?? E.EVENT_TYPE_UNSPECIFIED];
    if (counted) a[counted]++;
    if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_STARTED) a['activity attempt'] += e.activityTaskStartedEventAttributes?.attempt ?? 1;
    if (e.eventType === E.EVENT_TYPE_MARKER_RECORDED && e.markerRecordedEventAttributes?.markerName === 'core_local_activity') localTasks.add(String(e.markerRecordedEventAttributes.workflowTaskCompletedEventId));
  }
  a['local activities'] = localTasks.size;
  return a;
}

/** The events that are one action each. */
const COUNTED: Partial<Record<number, ActionType>> = {
  [E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED]: 'workflow started',
  [E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED]: 'signal',
  [E.EVENT_TYPE_TIMER_STARTED]: 'timer',
  [E.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES]: 'search attributes',
  [E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED]: 'update',
};

/** The delivery's status changes after CREATED (set with the creation's upsert) to its last, along the provider's lifecycle: 4 if delivered. */
export function deliveryStatusChanges(result: Pick<DeliveryResult, 'status'>): number {
  const rank = result.status === undefined ? undefined : deliveryRank(result.status);
  return Math.max(0, (rank ?? 0) - (deliveryRank('CREATED') ?? 0));
}

const total = (a: Actions) => ACTION_TYPES.reduce((s, t) => s + a[t], 0);
const add = (x: Actions, y: Actions) => Object.fromEntries(ACTION_TYPES.map((t) => [t, x[t] + y[t]])) as Actions;
const scale = (x: Actions, k: number) => Object.fromEntries(ACTION_TYPES.map((t) => [t, Math.round(x[t] * k * 100) / 100])) as Actions;
const empty = () => Object.fromEntries(ACTION_TYPES.map((t) => [t, 0])) as Actions;

export async function costBenchmark(): Promise<BenchmarkOutput> {
  if (DELIVERIES < 1 || STOPS.some((s) => !Number.isInteger(s) || s < 1 || s > 100)) throw new Error('COST_BENCH_DELIVERIES must be at least 1 and COST_BENCH_STOPS stops of 1 to 100');
  return withBenchStack(progress, 20 * 60_000, {}, async (stack) => {
    // The order system's endpoint: takes every notification (the shapes that notify).
    const receiver = await startReceiver();
    stack.cleanup.add(() => receiver.close());
    const notify = { DELIVERY_NOTIFY_ENDPOINTS: `orders=${receiver.url}`, DELIVERY_NOTIFY_SECRETS: `orders=${receiver.secret}`, DELIVERY_STATUS_SEARCH: STATUS_SEARCH };
    const started = await stack.deliveryStack(TASK_QUEUE, { PROVIDER_RATE_LIMITS: 'creations=100000/60s,quotes=100000/60s', ...notify }, { autoAdvanceMs: 300 });
    const { sim, worker, bridge: { process: bridge }, temporal: client, deliveries } = started;
    const figures: Record<string, number | string> = { deliveries_per_shape: DELIVERIES, status_search: STATUS_SEARCH };
    const chartGroups: { label: string; values: number[] }[] = [];
    const shapes = [...STOPS.map((stops) => ({ stops, notify: false })), { stops: STOPS[0]!, notify: true }];
    let n = 0;
    for (const shape of shapes) {
      const name = `${shape.stops}_stops${shape.notify ? '_notified' : ''}`;
      progress(`${name}: ${DELIVERIES} deliveries end to end...`);
      const refs = Array.from({ length: DELIVERIES }, () => `COST-${++n}-${Date.now().toString(36)}`);
      const cpu = cpuMeter({ worker: worker.pid, bridge: bridge.pid });
      let statusChanges = 0;
      const webhooks0 = sim.webhookAttempts().length;
      const startedAt = Date.now();
      // The grace's timer is counted; its length does not change the count.
      const followUp = { endGraceMs: 1_000 };
      // Distinct orders: identical ones asking together share one quote at the gate, which would flatter its share.
      const order = (reference: string) => deliveryRequest({ pickup_location: { ...deliveryRequest().pickup_location, company: `Kitchen ${reference}` } }, shape.stops);
      await cpu.span(async () => {
        await pool(refs, 8, async (reference) => void (await deliveries.startDelivery(order(reference), { reference, followUp, notify: shape.notify ? { endpoint: 'orders' } : undefined })));
        await pool(refs, 32, async (reference) => {
          const changes = deliveryStatusChanges(await deliveries.result(reference)); // read before adding: `x += await …` would add to a stale x
          statusChanges += changes;
        });
      });
      const endedAt = Date.now();
      const webhooks = sim.webhookAttempts().length - webhooks0;
      const workerMs = (cpu.seconds.worker * 1000) / DELIVERIES;
      const bridgeMs = (cpu.seconds.bridge * 1000) / Math.max(1, webhooks);

      const each = await Promise.all(refs.map((reference) => histories(client, `delivery:${reference}`)));
      const events = each.reduce((n, h) => n + h.length, 0);
      const own = each.map((h) => countActions(h)).reduce(add, empty());
      const gateEvents = await histories(client, gateWorkflowId(TASK_QUEUE));
      const within = (t: number) => t >= startedAt - 1_000 && t <= endedAt + 1_000;
      const inWindow = (e: HistoryEvent) => within(Number(e.eventTime?.seconds ?? 0) * 1000);
      const gate = scale(countActions(gateEvents, inWindow), 1 / DELIVERIES);
      const perDelivery = scale(own, 1 / DELIVERIES);
      // The least a delivery needs (docs/benchmarks.md, "What a delivery costs").
      const least = 1 + webhooks / DELIVERIES + 2 + statusChanges / DELIVERIES;
      const all = total(perDelivery) + total(gate);
      Object.assign(figures, {
        [`${name}_events`]: Math.round(events / DELIVERIES),
        [`${name}_actions`]: Math.round(all * 100) / 100,
        [`${name}_delivery_actions`]: total(perDelivery),
        [`${name}_gate_actions_per_order`]: total(gate),
        [`${name}_least_actions`]: least,
        [`${name}_actions_over_least`]: Math.round((all / least) * 100) / 100,
        [`${name}_webhooks`]: webhooks / DELIVERIES,
        [`${name}_status_changes`]: statusChanges / DELIVERIES,
        [`${name}_signals_received`]: own.signal / DELIVERIES,
        [`${name}_worker_cpu_ms`]: Math.round(workerMs),
        [`${name}_bridge_cpu_ms_per_webhook`]: Math.round(bridgeMs * 100) / 100,
        ...Object.fromEntries(ACTION_TYPES.map((t) => [`${name}_${t.replace(/ /g, '_')}`, Math.round((perDelivery[t] + gate[t]) * 100) / 100])),
      });
      chartGroups.push({ label: name.replace(/_/g, ' '), values: ACTION_TYPES.map((t) => perDelivery[t] + gate[t]) });
      progress(`${name}: ${Math.round(all * 10) / 10} actions per delivery (least ${least}), ${Math.round(events / DELIVERIES)} events, worker ${Math.round(workerMs)} ms CPU, bridge ${Math.round(bridgeMs * 10) / 10} ms per webhook`);
    }
    const chart = barChart({ title: 'Billable actions per delivered delivery, by type', xLabel: 'shape (gate share included)', yLabel: 'actions', series: [...ACTION_TYPES], groups: chartGroups });
    return { figures, charts: { actions: chart } };
  });
}
