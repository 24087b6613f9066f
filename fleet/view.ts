// fleet/: the fleet view, one process for a whole deployment (`npm run fleet`).
/**
 * Open deliveries by `DeliveryStatus` and account, and the age of the oldest in each status since
 * it entered that status (`DeliveryStatusSince`; the start for `none`), from Temporal's
 * visibility, and the pacing gate's backlog from its `gateStatus` query, as Prometheus gauges.
 *
 * Temporal 1.29.1's SQL visibility (the dev server's SQLite, the cluster's PostgreSQL) refuses
 * ORDER BY and groups counts by ExecutionStatus only (its query converter), so:
 * - per status, one CountWorkflowExecutions for all accounts, and with more accounts than
 *   `default` one per account (`(other)`: what the registry's accounts do not cover);
 * - the oldest is found with a time bound: a list page of those that entered the status before a
 *   cutoff. An unbounded page (newest started first) that is complete holds them all; one that is
 *   not sets the cutoff just after its oldest, and the bounded page then holds only those older,
 *   a few (the ones that entered later are all newer than the cutoff), so its oldest is the
 *   status's. Deliveries only leave that set; once it is empty the next list is unbounded again.
 *   At most two list pages per status a poll; while a cutoff holds, one.
 * The next poll waits 30 s per query the busiest status took (at least the period), so the
 * budget is at most one query per status per 30 s whatever the number of deliveries.
 */
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { Counter, Gauge, Registry } from 'prom-client';
import { DELIVERY_STATUSES } from '../provider/schemas';
import { DEFAULT_ACCOUNT } from '../contract/accounts';
import { gateStatusQuery, type GateStatus } from '../contract/gate-messages';
import { DeliveryAccount, DeliveryStatusSince } from '../contract/search-attributes';
import { gateWorkflowId } from '../contract/workflow-ids';
import { metricsAccount } from '../metrics/account';

/** `none`: open, not created yet (no DeliveryStatus set). */
export const FLEET_STATUSES = [...DELIVERY_STATUSES, 'none'] as const;
type FleetStatus = (typeof FLEET_STATUSES)[number];
const PAGE = 1_000;
const FAMILIES = ['creations', 'quotes'] as const;
/** The visibility budget: one query per status per this long. */
export const QUERY_SPACING_MS = 30_000;
/** The account label of open deliveries whose account the registry does not list (a removed account's). */
export const OTHER_ACCOUNT = '(other)';

export interface FleetViewOptions {
  client: Client;
  namespace: string;
  /** The delivery task queue: its deliveries are counted, its pacing gate asked for its backlog. */
  taskQueue: string;
  periodMs: number;
  /** Rows per list page (default 1,000; tests make it small to have more than a page). */
  pageSize?: number;
  /** The registry's account ids, read at each poll (accounts/registry.ts, accountIdsFromEnv); default: `default` only. */
  accounts?: () => readonly string[];
  now?: () => number;
}

/** The oldest open delivery of a status: when it entered it, and its account. */
interface Oldest {
  since: number;
  account: string;
}

export class FleetView {
  readonly registry = new Registry();
  /** Open deliveries per status, per account. */
  private readonly open = new Map<FleetStatus, Map<string, number>>();
  private readonly oldest = new Map<FleetStatus, Oldest>();
  /** Per status: only those that entered it before this are listed (see above). */
  private readonly cutoffs = new Map<FleetStatus, number>();
  private gate: GateStatus | undefined;
  private readonly queries: Counter<'account' | 'kind'>;
  private readonly failures: Counter<'account' | 'kind'>;
  private timer?: ReturnType<typeof setTimeout>;
  private polling?: Promise<void>;
  private readonly now: () => number;
  /** How long the last poll said to wait before the next (the period, or more for the budget). */
  private delayMs: number;
  /** When the last poll whose every count and list succeeded ended (the start until one has). */
  private updatedAt: number;
  /** A count or list of the current poll failed. */
  private pollFailed = false;

  constructor(private readonly o: FleetViewOptions) {
    this.now = o.now ?? Date.now;
    this.delayMs = o.periodMs;
    this.updatedAt = this.now();
    const registers = [this.registry];
    const account = metricsAccount();
    // Read at scrape time by the gauges' collect(), whose `this` is the gauge.
    const { open, oldest } = this;
    const now = () => this.now();
    const gateStatus = () => this.gate;
    const delay = () => this.delayMs;
    const updated = () => this.updatedAt;
    new Gauge({
      name: 'delivery_fleet_open',
      help: "Open deliveries by account and DeliveryStatus (none: not created yet), from visibility counts; (other): an account the registry does not list.",
      labelNames: ['account', 'status'],
      registers,
      collect() {
        this.reset();
        for (const [status, byAccount] of open) for (const [a, n] of byAccount) this.labels(a, status).set(n);
      },
    });
    new Gauge({
      name: 'delivery_fleet_oldest_age_seconds',
      help: 'How long the oldest open delivery of each DeliveryStatus has been in it (none: since its start), labelled with its account; 0 when none is open.',
      labelNames: ['account', 'status'],
      registers,
      collect() {
        this.reset();
        for (const status of open.keys()) {
          const o = oldest.get(status);
          if (o) this.labels(o.account, status).set(Math.max(0, (now() - o.since) / 1000));
          else this.labels(account, status).set(0);
        }
      },
    });
    new Gauge({
      name: 'delivery_fleet_period_seconds',
      help: "The fleet view's wait between polls: FLEET_PERIOD_MS, or longer when a poll took more than 2 queries for a status (accounts, a cutoff reset), to stay within one query per status per 30 s.",
      labelNames: ['account'],
      registers,
      collect() {
        this.labels(account).set(delay() / 1000);
      },
    });
    new Gauge({
      name: 'delivery_fleet_updated_timestamp_seconds',
      help: "When the fleet view's figures were last refreshed by a poll whose every count and list succeeded (Unix time); its start until one has. FleetViewStale compares it with the period.",
      registers,
      collect() {
        this.set(updated() / 1000);
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

  /** Polls now, then after each poll's delay, until stop(). */
  start(): void {
    const tick = () => {
      this.polling = this.poll().then(() => undefined, () => undefined).finally(() => {
        if (this.polling !== undefined) this.timer = setTimeout(tick, this.delayMs);
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

  /** One poll: each status's counts and its oldest; returns how long to wait before the next. */
  async poll(): Promise<number> {
    const accounts = [...new Set(this.o.accounts?.() ?? [DEFAULT_ACCOUNT])].sort();
    this.pollFailed = false;
    const made = await Promise.all([...FLEET_STATUSES.map((status) => this.pollStatus(status, accounts)), this.askGate().then(() => 0)]);
    this.delayMs = Math.max(this.o.periodMs, Math.max(...made) * QUERY_SPACING_MS);
    if (!this.pollFailed) this.updatedAt = this.now();
    return this.delayMs;
  }

  /** Returns the number of visibility queries made for the status. */
  private async pollStatus(status: FleetStatus, accounts: readonly string[]): Promise<number> {
    const base = `WorkflowType="delivery" AND TaskQueue="${this.o.taskQueue}" AND ExecutionStatus="Running" AND ${status === 'none' ? 'DeliveryStatus IS NULL' : `DeliveryStatus="${status}"`}`;
    let made = 0;
    const count = async (query: string) => {
      made++;
      this.queries.labels(metricsAccount(), 'count').inc();
      return (await this.o.client.workflow.count(query)).count;
    };
    try {
      const total = await count(base);
      const byAccount = new Map<string, number>();
      if (accounts.length === 1 && accounts[0] === DEFAULT_ACCOUNT) byAccount.set(DEFAULT_ACCOUNT, total);
      else {
        for (const a of accounts) byAccount.set(a, await count(`${base} AND ${accountClause(a)}`));
        const other = total - [...byAccount.values()].reduce((x, y) => x + y, 0);
        if (other > 0) byAccount.set(OTHER_ACCOUNT, other);
      }
      this.open.set(status, byAccount);
      if (total === 0) {
        this.oldest.delete(status);
        this.cutoffs.delete(status);
        return made;
      }
    } catch {
      this.pollFailed = true;
      this.failures.labels(metricsAccount(), 'count').inc();
      return made;
    }
    try {
      for (let lists = 0; lists < 2; lists++) {
        made++;
        if (await this.listOldest(status, base, accounts)) break;
      }
    } catch {
      this.pollFailed = true;
      this.failures.labels(metricsAccount(), 'list').inc();
    }
    return made;
  }

  /** One list page; true when the status's oldest is known from it. */
  private async listOldest(status: FleetStatus, base: string, accounts: readonly string[]): Promise<boolean> {
    const field = status === 'none' ? 'StartTime' : DeliveryStatusSince.name;
    const cutoff = this.cutoffs.get(status);
    const query = cutoff === undefined ? base : `${base} AND ${field} < "${new Date(cutoff).toISOString()}"`;
    this.queries.labels(metricsAccount(), 'list').inc();
    const page = await this.o.client.workflowService.listWorkflowExecutions({ namespace: this.o.namespace, query, pageSize: this.o.pageSize ?? PAGE });
    let found: Oldest | undefined;
    for (const e of page.executions ?? []) {
      const fields = e.searchAttributes?.indexedFields ?? {};
      const started = Number(e.startTime?.seconds ?? 0) * 1000 + Math.floor((e.startTime?.nanos ?? 0) / 1e6);
      // A delivery of a worker before DeliveryStatusSince has none: aged from its start (an upper bound).
      const since = status === 'none' ? started : (dateOf(fields[DeliveryStatusSince.name]) ?? started);
      if (since > 0 && (found === undefined || since < found.since)) found = { since, account: labelOf(stringOf(fields[DeliveryAccount.name]), accounts) };
    }
    const complete = !page.nextPageToken || page.nextPageToken.length === 0;
    if (found === undefined) {
      // Those older than the cutoff have all moved on: list unbounded next.
      this.cutoffs.delete(status);
      return cutoff === undefined;
    }
    this.oldest.set(status, found); // complete: the status's oldest; else the oldest seen, younger than it or the same
    if (complete) return true;
    this.cutoffs.set(status, found.since + 1);
    return false;
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

/** The default account's deliveries may not have DeliveryAccount yet (it is set with their first upsert). */
function accountClause(account: string): string {
  return account === DEFAULT_ACCOUNT ? `(${DeliveryAccount.name}="${account}" OR ${DeliveryAccount.name} IS NULL)` : `${DeliveryAccount.name}="${account}"`;
}

function labelOf(account: string | undefined, accounts: readonly string[]): string {
  const a = account ?? DEFAULT_ACCOUNT;
  return accounts.includes(a) ? a : OTHER_ACCOUNT;
}

function stringOf(p: Payload | undefined): string | undefined {
  const v: unknown = p ? defaultPayloadConverter.fromPayload(p) : undefined;
  return typeof v === 'string' ? v : undefined;
}

function dateOf(p: Payload | undefined): number | undefined {
  const t = Date.parse(stringOf(p) ?? '');
  return Number.isNaN(t) ? undefined : t;
}
