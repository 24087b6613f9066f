// fleet/: the fleet view, one process for a whole deployment (`npm run fleet`).
/**
 * Open deliveries by `DeliveryStatus` and account, the age of the oldest in each status since it
 * entered that status (`DeliveryStatusSince`; the start for `none`), the accounts with the most
 * open deliveries, and every account's pacing gate backlog, as Prometheus gauges. A pass costs the
 * same number of visibility queries whatever the number of accounts:
 * - per status, one CountWorkflowExecutions: the status's total;
 * - per status with deliveries open, one or two list pages for its oldest. SQL visibility (1.29.1
 *   and 1.32.1) refuses ORDER BY, so the oldest is found with a time bound: a page of those that
 *   entered the status before a cutoff. An unbounded page (newest started first) that is
 *   complete holds them all; one that is not sets the cutoff just after its oldest, and the
 *   bounded page then holds only those older (the ones that entered later are all newer than the
 *   cutoff), so its oldest is the status's. Deliveries only leave that set; once it is empty the
 *   next list is unbounded again;
 * - up to `scanPages` list pages of the open deliveries, by account (fleet/scan.ts): no server
 *   version counts by our search attributes (GROUP BY takes ExecutionStatus only).
 * And the gates of accounts with deliveries not created yet, `gatesPerPass` at most (fleet/gates.ts).
 * Accounts are labelled as every metric labels them (metrics/account.ts); the busiest-accounts
 * gauge names its K accounts by id, whichever they are: that is its purpose.
 */
import type { Client } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import { Counter, Gauge, Registry } from 'prom-client';
import { DELIVERY_STATUSES } from '../provider/schemas';
import type { GatedFamily, GateStatus } from '../contract/gate-messages';
import { DeliveryStatusSince } from '../contract/search-attributes';
import { AccountLabels, OTHER_ACCOUNTS } from '../metrics/account';
import { accountOf, OpenScan, stringOf } from './scan';
import { GateWatch } from './gates';

/** `none`: open, not created yet (no DeliveryStatus set). */
export const FLEET_STATUSES = [...DELIVERY_STATUSES, 'none'] as const;
type FleetStatus = (typeof FLEET_STATUSES)[number];
const PAGE = 1_000;
const FAMILIES = ['creations', 'quotes'] as const satisfies readonly GatedFamily[];
/** List pages of the open deliveries a pass reads (FLEET_SCAN_PAGES). */
export const DEFAULT_SCAN_PAGES = 5;
/** Accounts named by the busiest-accounts gauge (FLEET_BUSIEST_ACCOUNTS). */
export const DEFAULT_BUSIEST = 10;
/** Gates asked a pass at most (FLEET_GATES_PER_PASS). */
export const DEFAULT_GATES_PER_PASS = 20;

export interface FleetViewOptions {
  client: Client;
  namespace: string;
  /** The delivery task queue: its deliveries are counted, its accounts' pacing gates asked for their backlog. */
  taskQueue: string;
  periodMs: number;
  /** Rows per list page (default 1,000; tests make it small to have more than a page). */
  pageSize?: number;
  /** The registry's account ids in its order, read at each pass (accounts/registry.ts, accountIdsFromEnv). */
  accounts: () => readonly string[];
  /** Accounts labelled by name (default DELIVERY_METRICS_ACCOUNTS). */
  namedAccounts?: number;
  scanPages?: number;
  busiest?: number;
  gatesPerPass?: number;
  now?: () => number;
}

/** The oldest open delivery of a status: when it entered it, and its account's label. */
interface Oldest {
  since: number;
  account: string;
}

export class FleetView {
  readonly registry = new Registry();
  readonly labels: AccountLabels;
  /** Open deliveries per status (its count). */
  private readonly totals = new Map<FleetStatus, number>();
  private readonly oldest = new Map<FleetStatus, Oldest>();
  /** Per status: only those that entered it before this are listed (see above). */
  private readonly cutoffs = new Map<FleetStatus, number>();
  private readonly scan: OpenScan;
  private readonly gates: GateWatch;
  private readonly queries: Counter<'kind'>;
  private readonly failures: Counter<'kind'>;
  private timer?: ReturnType<typeof setTimeout>;
  private polling?: Promise<void>;
  private readonly now: () => number;
  /** When the last pass whose every count and list succeeded ended (the start until one has). */
  private updatedAt: number;
  /** A count or list of the current pass failed. */
  private pollFailed = false;
  private readonly base: string;

  constructor(private readonly o: FleetViewOptions) {
    this.now = o.now ?? Date.now;
    this.updatedAt = this.now();
    this.labels = new AccountLabels({ ids: () => [...o.accounts()] }, o.namedAccounts);
    this.base = `WorkflowType="delivery" AND TaskQueue="${o.taskQueue}" AND ExecutionStatus="Running"`;
    this.scan = new OpenScan({ client: o.client, namespace: o.namespace, query: this.base, pageSize: o.pageSize ?? PAGE, pages: o.scanPages ?? DEFAULT_SCAN_PAGES, now: this.now });
    this.gates = new GateWatch({ client: o.client, taskQueue: o.taskQueue, perPass: o.gatesPerPass ?? DEFAULT_GATES_PER_PASS, now: this.now });
    const registers = [this.registry];
    // Read at scrape time by the gauges' collect(), whose `this` is the gauge.
    const { totals, oldest, scan, gates, labels } = this;
    const now = () => this.now();
    const updated = () => this.updatedAt;
    const busiest = o.busiest ?? DEFAULT_BUSIEST;
    new Gauge({
      name: 'delivery_fleet_status_open',
      help: 'Open deliveries by DeliveryStatus (none: not created yet), every account together: a visibility count each pass.',
      labelNames: ['status'],
      registers,
      collect() {
        this.reset();
        for (const [status, n] of totals) this.labels(status).set(n);
      },
    });
    new Gauge({
      name: 'delivery_fleet_open',
      help: 'Open deliveries by account (the registry\'s first DELIVERY_METRICS_ACCOUNTS by id, the rest _other) and DeliveryStatus (none: not created yet), from the last complete scan of the open deliveries.',
      labelNames: ['account', 'status'],
      registers,
      collect() {
        this.reset();
        const by = new Map<string, Map<string, number>>(labels.values().map((a) => [a, new Map(FLEET_STATUSES.map((s) => [s, 0]))]));
        for (const [account, byStatus] of scan.last?.byAccountStatus ?? []) {
          const into = by.get(labels.of(account))!;
          for (const [status, n] of byStatus) into.set(status, (into.get(status) ?? 0) + n);
        }
        if (scan.last) for (const [account, byStatus] of by) for (const [status, n] of byStatus) this.labels(account, status).set(n);
      },
    });
    new Gauge({
      name: 'delivery_fleet_busiest_open',
      help: `Open deliveries of the ${busiest} accounts that have the most (FLEET_BUSIEST_ACCOUNTS), each by its id whether or not it is labelled by name elsewhere, from the last complete scan.`,
      labelNames: ['account'],
      registers,
      collect() {
        this.reset();
        for (const [account, n] of scan.busiest(busiest)) this.labels(account).set(n);
      },
    });
    new Gauge({
      name: 'delivery_fleet_scan_timestamp_seconds',
      help: 'When the last complete scan of the open deliveries (the by-account figures) ended, in seconds since the epoch; 0 before the first.',
      registers,
      collect() {
        this.set((scan.last?.at ?? 0) / 1000);
      },
    });
    new Gauge({
      name: 'delivery_fleet_oldest_age_seconds',
      help: 'How long the oldest open delivery of each DeliveryStatus has been in it (none: since its start), labelled with its account; 0 when none is open.',
      labelNames: ['account', 'status'],
      registers,
      collect() {
        this.reset();
        for (const status of totals.keys()) {
          const o = oldest.get(status);
          if (o) this.labels(o.account, status).set(Math.max(0, (now() - o.since) / 1000));
          else this.labels(OTHER_ACCOUNTS, status).set(0);
        }
      },
    });
    const periodMs = o.periodMs;
    new Gauge({
      name: 'delivery_fleet_period_seconds',
      help: "The fleet view's wait between passes (FLEET_PERIOD_MS).",
      registers,
      collect() {
        this.set(periodMs / 1000);
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
    /** Per label value and family, the gates' figures: summed (waiting, slots) or the largest (waits, windows) over the accounts of one value. */
    const gauge = (name: string, help: string, value: (g: GateStatus, f: GatedFamily, ageMs: number) => number, combine: (a: number, b: number) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['account', 'family'],
        registers,
        collect() {
          this.reset();
          const t = now();
          const by = new Map<string, number>();
          for (const [account, seen] of gates.seen) {
            for (const f of FAMILIES) {
              const k = `${labels.of(account)}\n${f}`;
              const v = value(seen.status, f, t - seen.at);
              by.set(k, by.has(k) ? combine(by.get(k)!, v) : v);
            }
          }
          for (const [k, v] of by) {
            const [account, family] = k.split('\n') as [string, string];
            this.labels(account, family).set(v);
          }
        },
      });
    const sum = (a: number, b: number) => a + b;
    gauge('delivery_gate_waiting', "Requests waiting at the accounts' pacing gates for a slot, by call family (each gate's gateStatus query; _other: its accounts' together).", (g, f) => g.waitingByFamily?.[f] ?? 0, sum);
    // A wait goes on between two asks: aged by the time since the gate answered.
    gauge('delivery_gate_oldest_wait_seconds', 'How long the oldest request waiting at the pacing gate has waited, by call family (_other: the longest of its accounts).', (g, f, ageMs) => ((g.waitingByFamily?.[f] ?? 0) > 0 ? (g.oldestWaitMs?.[f] ?? 0) + ageMs : 0) / 1000, Math.max);
    gauge('delivery_gate_slots_used', "The pacing gate's slots taken in the current window (calls out and slots still held), by call family.", (g, f) => g.config.limits[f].limit - g.free[f], sum);
    gauge('delivery_gate_slots_limit', "The provider's limit per window the gate paces to, by call family.", (g, f) => g.config.limits[f].limit, sum);
    gauge('delivery_gate_window_seconds', "The provider's window for the family's limit (_other: the longest of its accounts).", (g, f) => g.config.limits[f].windowMs / 1000, Math.max);
    this.queries = new Counter({ name: 'delivery_fleet_visibility_queries_total', help: 'Visibility queries the fleet view made, by kind (count; list: a status\'s oldest; scan: the open deliveries by account).', labelNames: ['kind'], registers });
    this.failures = new Counter({ name: 'delivery_fleet_poll_failures_total', help: "The fleet view's queries that failed, by kind (count, list, scan, gate).", labelNames: ['kind'], registers });
    for (const kind of ['count', 'list', 'scan']) this.queries.labels(kind).inc(0);
    for (const kind of ['count', 'list', 'scan', 'gate']) this.failures.labels(kind).inc(0);
  }

  /** Polls now, then every period, until stop(). */
  start(): void {
    const tick = () => {
      this.polling = this.poll().then(() => undefined, () => undefined).finally(() => {
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

  /** One pass: each status's count and oldest, a step of the scan, then the gates of the accounts it found waiting. */
  async poll(): Promise<void> {
    this.labels.refresh(); // the registry as it is now
    this.pollFailed = false;
    await Promise.all([...FLEET_STATUSES.map((status) => this.pollStatus(status)), this.stepScan()]);
    const waiting = new Set<string>();
    for (const [account, byStatus] of this.scan.last?.byAccountStatus ?? []) if ((byStatus.get('none') ?? 0) > 0) waiting.add(account);
    const { failed } = await this.gates.pass(waiting);
    if (failed > 0) this.failures.labels('gate').inc(failed);
    if (!this.pollFailed) this.updatedAt = this.now();
  }

  private async stepScan(): Promise<void> {
    try {
      await this.scan.step(() => this.queries.labels('scan').inc());
    } catch {
      this.failures.labels('scan').inc();
      this.scan.restart();
    }
  }

  private async pollStatus(status: FleetStatus): Promise<void> {
    const base = `${this.base} AND ${status === 'none' ? 'DeliveryStatus IS NULL' : `DeliveryStatus="${status}"`}`;
    try {
      this.queries.labels('count').inc();
      const total = (await this.o.client.workflow.count(base)).count;
      this.totals.set(status, total);
      if (total === 0) {
        this.oldest.delete(status);
        this.cutoffs.delete(status);
        return;
      }
    } catch {
      this.pollFailed = true;
      this.failures.labels('count').inc();
      return;
    }
    try {
      for (let lists = 0; lists < 2; lists++) if (await this.listOldest(status, base)) break;
    } catch {
      this.pollFailed = true;
      this.failures.labels('list').inc();
    }
  }

  /** One list page; true when the status's oldest is known from it. */
  private async listOldest(status: FleetStatus, base: string): Promise<boolean> {
    const field = status === 'none' ? 'StartTime' : DeliveryStatusSince.name;
    const cutoff = this.cutoffs.get(status);
    const query = cutoff === undefined ? base : `${base} AND ${field} < "${new Date(cutoff).toISOString()}"`;
    this.queries.labels('list').inc();
    const page = await this.o.client.workflowService.listWorkflowExecutions({ namespace: this.o.namespace, query, pageSize: this.o.pageSize ?? PAGE });
    let found: Oldest | undefined;
    for (const e of page.executions ?? []) {
      const fields = e.searchAttributes?.indexedFields ?? {};
      const started = Number(e.startTime?.seconds ?? 0) * 1000 + Math.floor((e.startTime?.nanos ?? 0) / 1e6);
      // A delivery of a worker before DeliveryStatusSince has none: aged from its start (an upper bound).
      const since = status === 'none' ? started : (dateOf(fields[DeliveryStatusSince.name]) ?? started);
      if (since > 0 && (found === undefined || since < found.since)) found = { since, account: this.labels.of(accountOf(e)) };
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
}

function dateOf(p: Payload | undefined): number | undefined {
  const t = Date.parse(stringOf(p) ?? '');
  return Number.isNaN(t) ? undefined : t;
}
