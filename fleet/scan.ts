/**
 * The open deliveries, by account and status, read a few list pages a pass (fleet/view.ts): the
 * server cannot count by a search attribute of ours (a grouped count takes ExecutionStatus only,
 * on servers 1.29.1 and 1.32.1, SQL or Elasticsearch visibility), so the view lists the open
 * deliveries and counts them itself. A pass reads at most `pages` pages and carries the page token
 * to the next pass; a scan that is complete replaces the last one's tallies. The queries a period
 * costs stay `pages`, whatever the number of accounts; a full scan takes ceil(open / page size /
 * pages) passes.
 */
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { parseDeliveryWorkflowId } from '../contract/workflow-ids';
import { OTHER_ACCOUNTS } from '../metrics/account';
import { DeliveryAccount, DeliveryStatus } from '../contract/search-attributes';

/** Open deliveries per account, and per account per status (`none`: no DeliveryStatus yet). */
export interface Tallies {
  byAccount: Map<string, number>;
  byAccountStatus: Map<string, Map<string, number>>;
  /** When the scan that made them ended (ms since the epoch). */
  at: number;
}

export class OpenScan {
  private token: Uint8Array | undefined;
  private partial = emptyTallies(0);
  /** The last complete scan's; undefined until one is. */
  last: Tallies | undefined;

  constructor(private readonly o: { client: Client; namespace: string; query: string; pageSize: number; pages: number; now: () => number }) {}

  /** Reads up to `pages` pages; `onPage` is told of each query. Returns whether a scan was completed. */
  async step(onPage: () => void): Promise<boolean> {
    for (let n = 0; n < this.o.pages; n++) {
      onPage();
      const page = await this.o.client.workflowService.listWorkflowExecutions({ namespace: this.o.namespace, query: this.o.query, pageSize: this.o.pageSize, nextPageToken: this.token });
      for (const e of page.executions ?? []) {
        const fields = e.searchAttributes?.indexedFields ?? {};
        add(this.partial, accountOf(e), stringOf(fields[DeliveryStatus.name]) ?? 'none');
      }
      this.token = page.nextPageToken && page.nextPageToken.length > 0 ? page.nextPageToken : undefined;
      if (this.token === undefined) {
        this.last = { ...this.partial, at: this.o.now() };
        this.partial = emptyTallies(0);
        return true;
      }
    }
    return false;
  }

  /** After a failed page: the next pass starts the scan again (a page token may not outlive a changed list). */
  restart(): void {
    this.token = undefined;
    this.partial = emptyTallies(0);
  }

  /** The `k` accounts with the most open deliveries, most first (ties by id). */
  busiest(k: number): [string, number][] {
    return [...(this.last?.byAccount ?? [])].sort(([a, x], [b, y]) => y - x || a.localeCompare(b)).slice(0, k);
  }
}

function emptyTallies(at: number): Tallies {
  return { byAccount: new Map(), byAccountStatus: new Map(), at };
}

function add(t: Tallies, account: string, status: string): void {
  t.byAccount.set(account, (t.byAccount.get(account) ?? 0) + 1);
  let byStatus = t.byAccountStatus.get(account);
  if (!byStatus) t.byAccountStatus.set(account, (byStatus = new Map()));
  byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
}

/**
 * A listed delivery's account: its DeliveryAccount, or (a delivery of 0.2.0 has none) the one its
 * workflow ID names; neither: counted among the other accounts.
 */
export function accountOf(e: { execution?: { workflowId?: string | null } | null; searchAttributes?: { indexedFields?: Record<string, Payload> | null } | null }): string {
  return stringOf(e.searchAttributes?.indexedFields?.[DeliveryAccount.name]) ?? parseDeliveryWorkflowId(e.execution?.workflowId ?? '')?.account ?? OTHER_ACCOUNTS;
}

export function stringOf(p: Payload | undefined): string | undefined {
  const v: unknown = p ? defaultPayloadConverter.fromPayload(p) : undefined;
  return typeof v === 'string' ? v : undefined;
}
