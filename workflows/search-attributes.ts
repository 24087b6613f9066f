/**
 * The delivery's search attributes, upserted once per workflow task with everything that changed
 * in it (Temporal Cloud bills each upsert command as an action; a creation sets five at once).
 * The flush is a microtask: it runs after this task's handlers and before the task's commands are
 * sent, the same way on every replay.
 *
 * None is set at the start: on the dev server's SQLite visibility a start with any custom search
 * attribute is taken about 13 % slower (docs/benchmarks.md, scale). The order's own (reference,
 * food, stops) go out with the first upsert the delivery makes anyway, the creation's, or earlier
 * when it waits for approval, or at its end when it never got that far. Until then the delivery is
 * found by its workflow ID, `delivery:<reference>`.
 */
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { DeliveryWorkflowInput } from '../contract/delivery-types';
import { DEFAULT_ACCOUNT } from '../contract/accounts';
import { DeliveryAccount, DeliveryStatus, DeliveryStatusSince, DestinationCount, IsFood, OrderReference, type StatusSearch } from '../contract/search-attributes';

export function batchedUpserts(): (pair: SearchAttributeUpdatePair) => void {
  const pending = new Map<string, SearchAttributeUpdatePair>();
  const flush = () => {
    const pairs = [...pending.values()];
    pending.clear();
    upsertSearchAttributes(pairs);
  };
  return (pair) => {
    if (pending.size === 0) void Promise.resolve().then(flush);
    pending.set(pair.key.name, pair);
  };
}

/** What one delivery run sets, and when (contract/search-attributes.ts). */
export class DeliverySearch {
  private readonly upsert = batchedUpserts();
  /** Set already: by a run this one continued from, or by a starter that still sets them. */
  private orderSet: boolean;
  private statusSet: string | undefined;
  private policy: StatusSearch = 'every';

  /** Set by the starter (an account other than `default`: workflows/start-options.ts). */
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

  set(pair: SearchAttributeUpdatePair): void {
    this.setOrder();
    this.upsert(pair);
  }

  /** The delivery's status, when the policy says so; `final`: the delivery has ended, or its workflow is ending. */
  status(status: string | undefined, final: boolean): void {
    if (status === undefined || status === this.statusSet || (this.policy === 'final' && !final)) return;
    this.statusSet = status;
    this.set({ key: DeliveryStatus, value: status });
    // The same upsert (batchedUpserts): the workflow's clock, deterministic on replay.
    this.upsert({ key: DeliveryStatusSince, value: new Date() });
  }

  /** At the workflow's end: a delivery that never reached its creation is findable by its order too. */
  end(status: string | undefined): void {
    if (status !== undefined) this.status(status, true);
    else this.setOrder();
  }

  /** The order's own attributes, with the first upsert this run makes. */
  private setOrder(): void {
    if (this.orderSet) return;
    this.orderSet = true;
    this.upsert({ key: OrderReference, value: this.input.reference });
    this.upsert({ key: IsFood, value: this.input.order.is_food });
    this.upsert({ key: DestinationCount, value: this.input.order.destinations.length });
    if (!this.accountSet) this.upsert({ key: DeliveryAccount, value: this.input.account ?? DEFAULT_ACCOUNT });
  }
}
