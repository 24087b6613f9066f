/**
 * Every account's pacing gate backlog, seen by the fleet view (fleet/view.ts) at a bounded cost:
 * a gate has requests waiting only while deliveries of its account are not created yet (status
 * `none`), so a pass asks the `gateStatus` query of those accounts' gates only, at most `perPass`
 * of them, the least recently asked first: with more accounts waiting than that, each is asked
 * every ceil(accounts / perPass) passes. The figures of an account with nothing waiting any more
 * are dropped. A query is a workflow query (a worker answers it), not a visibility query.
 */
import type { Client } from '@temporalio/client';
import { gateStatusQuery, type GateStatus } from '../contract/gate-messages';
import { gateWorkflowId } from '../contract/workflow-ids';

/** A gate's answer and when it was given. */
export interface GateSeen {
  status: GateStatus;
  at: number;
}

export class GateWatch {
  /** Account → its gate's last answer. */
  readonly seen = new Map<string, GateSeen>();
  private readonly askedAt = new Map<string, number>();

  constructor(private readonly o: { client: Client; taskQueue: string; perPass: number; now: () => number }) {}

  /** Asks the gates of `waiting` (accounts with deliveries not created yet); returns how many asks failed. */
  async pass(waiting: ReadonlySet<string>): Promise<{ asked: number; failed: number }> {
    for (const account of [...this.seen.keys()]) if (!waiting.has(account)) this.seen.delete(account);
    for (const account of [...this.askedAt.keys()]) if (!waiting.has(account)) this.askedAt.delete(account);
    const turn = [...waiting].sort((a, b) => (this.askedAt.get(a) ?? -1) - (this.askedAt.get(b) ?? -1) || a.localeCompare(b)).slice(0, this.o.perPass);
    let failed = 0;
    await Promise.all(
      turn.map(async (account) => {
        const at = this.o.now();
        this.askedAt.set(account, at);
        try {
          this.seen.set(account, { status: await this.o.client.workflow.getHandle(gateWorkflowId(this.o.taskQueue, account)).query(gateStatusQuery), at });
        } catch {
          // No gate (pacing by task queue, or it has not started): no figures for it.
          this.seen.delete(account);
          failed++;
        }
      }),
    );
    return { asked: turn.length, failed };
  }
}
