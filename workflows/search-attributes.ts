/**
 * The delivery's search attributes, upserted once per change with everything that changed in it
 * (Temporal Cloud bills each upsert command as an action; a creation sets five at once).
 *
 * An upsert goes out at the end of the change that made it, in program order, never later: which
 * jobs share an activation is not always the same in a run and in its replay (a query of a
 * delivery whose workflow task waits can make the worker handle a signal in an activation of its
 * own, and a replay then hands it over together with a cancellation that came next). An upsert
 * deferred to the end of the activation changed places with the commands of the jobs after it,
 * and that history could no longer be replayed (test/histories/baseline/a-signal-and-a-cancellation-*).
 *
 * Only DeliveryAccount is set at the start, by the starter (workflows/start-options.ts; the
 * operator's first filter, for every account): on the dev server's SQLite visibility a start with
 * any custom search attribute is taken about 13 % slower (docs/benchmarks.md, scale), so no more.
 * The order's own (reference, food, stops) go out with the first upsert the delivery makes anyway,
 * the creation's, or earlier when it waits for approval, or at its end when it never got that far.
 * Until then the delivery is found by its workflow ID.
 */
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { DeliveryWorkflowInput } from '../contract/delivery-types';
import { startAccount } from '../contract/workflow-ids';
import { DeliveryAccount, DeliveryStatus, DeliveryStatusSince, DestinationCount, IsFood, OrderReference, type StatusSearch } from '../contract/search-attributes';

/** The pairs set within one change, upserted together when it ends; a pair set outside any change goes out at once. */
export class UpsertBatches {
  private readonly pending = new Map<string, SearchAttributeUpdatePair>();
  private depth = 0;

  constructor(private readonly upsert: (pairs: SearchAttributeUpdatePair[]) => void = upsertSearchAttributes) {}

  /** One change: everything `fn` sets goes out in one upsert when it returns (or throws). */
  change<T>(fn: () => T): T {
    this.depth++;
    try {
      return fn();
    } finally {
      if (--this.depth === 0) this.flush();
    }
  }

  set(pair: SearchAttributeUpdatePair): void {
    this.pending.set(pair.key.name, pair);
    if (this.depth === 0) this.flush();
  }

  private flush(): void {
    if (this.pending.size === 0) return;
    const pairs = [...this.pending.values()];
    this.pending.clear();
    this.upsert(pairs);
  }
}

/** What one delivery run sets, and when (contract/search-attributes.ts). */
export class DeliverySearch {
  private readonly batches = new UpsertBatches();
  /** Set already: by a run this one continued from, or by a starter that still sets them. */
  private orderSet: boolean;
  private statusSet: string | undefined;
  private policy: StatusSearch = 'every';

  /** Set by the starter (the client library and the Nexus operation: workflows/start-options.ts); a start by name may leave it out. */
  private readonly accountSet: boolean;

  constructor(private readonly input: Pick<DeliveryWorkflowInput, 'reference' | 'order' | 'account'>) {
    const current = workflowInfo().typedSearchAttributes;
    this.orderSet = current.get(OrderReference) !== undefined;
    this.accountSet = current.get(DeliveryAccount) !== undefined;
    this.statusSet = current.get(DeliveryStatus);
  }

  /** The worker's DELIVERY_STATUS_SEARCH, once read; absent (settings of the workers before it, or not read yet): `every`. */
  get statusSearch(): StatusSearch {
    return this.policy;
  }
  set statusSearch(policy: StatusSearch | undefined) {
    this.policy = policy ?? 'every';
  }

  /** Several sets in one upsert: the creation's id, price and status. */
  change(fn: () => void): void {
    this.batches.change(fn);
  }

  set(pair: SearchAttributeUpdatePair): void {
    this.batches.change(() => {
      this.setOrder();
      this.batches.set(pair);
    });
  }

  /** The delivery's status, when the policy says so; `final`: the delivery has ended, or its workflow is ending. */
  status(status: string | undefined, final: boolean): void {
    if (status === undefined || status === this.statusSet || (this.policy === 'final' && !final)) return;
    this.statusSet = status;
    // One upsert: the workflow's clock, deterministic on replay.
    this.batches.change(() => {
      this.set({ key: DeliveryStatus, value: status });
      this.batches.set({ key: DeliveryStatusSince, value: new Date() });
    });
  }

  /** At the workflow's end: a delivery that never reached its creation is findable by its order too. */
  end(status: string | undefined): void {
    this.batches.change(() => (status !== undefined ? this.status(status, true) : this.setOrder()));
  }

  /** The order's own attributes, with the first upsert this run makes (always within a change). */
  private setOrder(): void {
    if (this.orderSet) return;
    this.orderSet = true;
    this.batches.set({ key: OrderReference, value: this.input.reference });
    this.batches.set({ key: IsFood, value: this.input.order.is_food });
    this.batches.set({ key: DestinationCount, value: this.input.order.destinations.length });
    if (!this.accountSet) this.batches.set({ key: DeliveryAccount, value: startAccount(this.input) });
  }
}
