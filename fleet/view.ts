// fleet/: the fleet view, one process for a whole deployment (`npm run fleet`).
/**
 * Open deliveries by `DeliveryStatus` and the age of the oldest in each, from Temporal's
 * visibility, and the pacing gate's backlog from its `gateStatus` query, as Prometheus gauges.
 *
 * The visibility budget is fixed whatever the number of deliveries: every `periodMs` (60 s by
 * default), per status, one CountWorkflowExecutions and at most one page of
 * ListWorkflowExecutions, so at most one query per status per 30 s. Temporal 1.29's SQL
 * visibility groups counts by ExecutionStatus only and has no ORDER BY, so each status is
 * counted on its own, and its oldest is found by walking its list (newest first) a page per
 * period: the last row of the walk's last page. With up to PAGE open in a status that is one
 * page; with more, the age published is the last finished walk's, and it grows with the clock
 * between walks. A status with nothing open costs its count only.
 */
import type { Client } from '@temporalio/client';
import { Counter, Gauge, Registry } from 'prom-client';
import { DELIVERY_STATUSES } from '../provider/schemas';
import { gateStatusQuery, type GateStatus } from '../contract/gate-messages';
import { gateWorkflowId } from '../contract/workflow-ids';
import { metricsAccount } from '../metrics/account';

/** `none`: open, not created yet (no DeliveryStatus set). */
export const FLEET_STATUSES = [...DELIVERY_STATUSES, 'none'] as const;
type FleetStatus = (typeof FLEET_STATUSES)[number];
const PAGE = 1_000;
const FAMILIES = ['creations', 'quotes'] as const;

export interface FleetViewOptions {
  client: Client;
  namespace: string;
  /** The delivery task queue: its deliveries are counted, its pacing gate asked for its backlog. */
  taskQueue: string;
  periodMs: number;
  now?: () => number;
}

interface Walk {
  token?: Uint8Array;
  oldestSoFar?: number;
}

export class FleetView {
  readonly registry = new Registry();
  private readonly open = new Map<FleetStatus, number>();
  /** Start time of the oldest open delivery per status, from the last finished walk. */
  private readonly oldest = new Map<FleetStatus, number>();
  private readonly walks = new Map<FleetStatus, Walk>();
  private gate: GateStatus | undefined;
  private readonly queries: Counter<'account' | 'kind'>;
  private readonly failures: Counter<'account' | 'kind'>;
  private timer?: ReturnType<typeof setTimeout>;
  private polling?: Promise<void>;
  private readonly now: () => number;

  constructor(private readonly o: FleetViewOptions) {
    this.now = o.now ?? Date.now;
    const registers = [this.registry];
    const account = metricsAccount();
    // Read at scrape time by the gauges' collect(), whose `this` is the gauge.
    const { open, oldest } = this;
    const now = () => this.now();
    const gateStatus = () => this.gate;
    new Gauge({
      name: 'delivery_fleet_open',
      help: 'Open deliveries by DeliveryStatus (none: not created yet), from a visibility count.',
      labelNames: ['account', 'status'],
      registers,
      collect() {
        for (const [status, n] of open) this.labels(account, status).set(n);
      },
    });
    new Gauge({
      name: 'delivery_fleet_oldest_age_seconds',
      help: 'Age (since its start) of the oldest open delivery in each DeliveryStatus; 0 when none is open.',
      labelNames: ['account', 'status'],
      registers,
      collect() {
        for (const status of open.keys()) {
          const started = open.get(status) ? oldest.get(status) : undefined;
          this.labels(account, status).set(started === undefined ? 0 : Math.max(0, (now() - started) / 1000));
        }
      },
    });
    const gauge = (name: string, help: string, value: (g: GateStatus, f: (typeof FAMILIES)[number]) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['account', 'family'],
        registers,
        collect() {
          const g = gateStatus();
          if (g) for (const f of FAMILIES) this.labels(account, f).set(value(g, f));
        },
      });
    gauge('delivery_gate_waiting', "Requests waiting at the pacing gate for a slot, by call family (the gate's gateStatus query).", (g, f) => g.waitingByFamily?.[f] ?? 0);
    gauge('delivery_gate_oldest_wait_seconds', 'How long the oldest request waiting at the pacing gate has waited, by call family.', (g, f) => (g.oldestWaitMs?.[f] ?? 0) / 1000);
    gauge('delivery_gate_slots_used', "The pacing gate's slots taken in the current window (calls out and slots still held), by call family.", (g, f) => g.config.limits[f].limit - g.free[f]);
    gauge('delivery_gate_slots_limit', "The provider's limit per window the gate paces to, by call family.", (g, f) => g.config.limits[f].limit);
    gauge('delivery_gate_window_seconds', "The provider's window for the family's limit.", (g, f) => g.config.limits[f].windowMs / 1000);
    this.queries = new Counter({ name: 'delivery_fleet_visibility_queries_total', help: 'Visibility queries the fleet view made, by kind (count, list).', labelNames: ['account', 'kind'], registers });
    this.failures = new Counter({ name: 'delivery_fleet_poll_failures_total', help: "The fleet view's queries that failed, by kind (count, list, gate).", labelNames: ['account', 'kind'], registers });
    for (const kind of ['count', 'list']) this.queries.labels(account, kind).inc(0);
    for (const kind of ['count', 'list', 'gate']) this.failures.labels(account, kind).inc(0);
  }

  /** Polls now, then every period, until stop(). */
  start(): void {
    const tick = () => {
      this.polling = this.poll().finally(() => {
        if (this.polling !== undefined) this.timer = setTimeout(tick, this.o.periodMs);
      });
    };
    tick();
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    const polling = this.polling;
    this.polling = undefined;
    await polling;
  }

  /** One period's queries: each status's count, then a page of its walk when it has open deliveries. */
  async poll(): Promise<void> {
    const account = metricsAccount();
    await Promise.all([
      ...FLEET_STATUSES.map(async (status) => {
        const query = `WorkflowType="delivery" AND TaskQueue="${this.o.taskQueue}" AND ExecutionStatus="Running" AND ${status === 'none' ? 'DeliveryStatus IS NULL' : `DeliveryStatus="${status}"`}`;
        try {
          this.queries.labels(account, 'count').inc();
          const { count } = await this.o.client.workflow.count(query);
          this.open.set(status, count);
          if (count === 0) return void (this.oldest.delete(status), this.walks.delete(status));
          await this.walkPage(status, query);
        } catch {
          this.failures.labels(account, 'count').inc();
        }
      }),
      this.askGate(),
    ]);
  }

  private async walkPage(status: FleetStatus, query: string): Promise<void> {
    const account = metricsAccount();
    const walk = this.walks.get(status) ?? {};
    this.queries.labels(account, 'list').inc();
    const page = await this.o.client.workflowService.listWorkflowExecutions({ namespace: this.o.namespace, query, pageSize: PAGE, nextPageToken: walk.token }).catch((err: unknown) => {
      this.failures.labels(account, 'list').inc();
      throw err;
    });
    for (const e of page.executions ?? []) {
      const started = Number(e.startTime?.seconds ?? 0) * 1000 + Math.floor((e.startTime?.nanos ?? 0) / 1e6);
      if (started > 0 && (walk.oldestSoFar === undefined || started < walk.oldestSoFar)) walk.oldestSoFar = started;
    }
    if (page.nextPageToken && page.nextPageToken.length > 0) {
      this.walks.set(status, { token: page.nextPageToken, oldestSoFar: walk.oldestSoFar });
      return;
    }
    this.walks.delete(status);
    if (walk.oldestSoFar !== undefined) this.oldest.set(status, walk.oldestSoFar);
  }

  private async askGate(): Promise<void> {
    try {
      this.gate = await this.o.client.workflow.getHandle(gateWorkflowId(this.o.taskQueue)).query(gateStatusQuery);
    } catch {
      // No gate yet (no delivery asked), or pacing by task queue: no gate figures.
      this.failures.labels(metricsAccount(), 'gate').inc();
    }
  }
}
