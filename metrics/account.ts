// metrics/: the Prometheus metrics of the worker and of the fleet view, and how they are served.
/**
 * The `account` label: how a courier account's id becomes a bounded Prometheus label value (the
 * one agreement every metric that concerns an account follows).
 *
 * The first DELIVERY_METRICS_ACCOUNTS accounts of the registry, in the file's order (default 50;
 * with no registry file, the environment's one account), are labelled by their id; every other
 * account shares the value `_other` (not a valid account id, so never one account's). Why the
 * file's order rather than the busiest: a label value that follows traffic makes series appear and
 * vanish as load moves, and an account that is not named today is found by its logs and the fleet
 * view's busiest-accounts list; the order of a config map is the operator's to choose and stays
 * put across restarts. 10,000 accounts make at most DELIVERY_METRICS_ACCOUNTS + 1 values.
 */
import { z } from 'zod';

/** The label value of every account beyond the named ones. */
export const OTHER_ACCOUNTS = '_other';
export const DEFAULT_METRICS_ACCOUNTS = 50;

const EnvSchema = z.object({
  DELIVERY_METRICS_ACCOUNTS: z.coerce.number().int({ message: 'must be a whole number' }).min(0, { message: 'must be 0 or more' }).max(10_000, { message: 'must be at most 10000' }).default(DEFAULT_METRICS_ACCOUNTS),
});

/** How many accounts are labelled by name; throws naming the variable and rule. */
export function namedAccountsFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const parsed = EnvSchema.safeParse({ DELIVERY_METRICS_ACCOUNTS: env.DELIVERY_METRICS_ACCOUNTS || undefined });
  if (!parsed.success) throw new Error(`DELIVERY_METRICS_ACCOUNTS: ${parsed.error.issues[0]!.message}`);
  return parsed.data.DELIVERY_METRICS_ACCOUNTS;
}

/** The accounts a registry lists, in its order: `AccountRegistry` satisfies it. */
export interface AccountList {
  ids(): string[];
}

/** Maps an account id to its label value; `refresh()` after the registry changed (a reload). */
export class AccountLabels {
  private named = new Set<string>();

  constructor(
    private readonly accounts: AccountList,
    readonly max: number = namedAccountsFromEnv(),
  ) {
    this.refresh();
  }

  refresh(): void {
    this.named = new Set(this.accounts.ids().slice(0, this.max));
  }

  of(account: string): string {
    return this.named.has(account) ? account : OTHER_ACCOUNTS;
  }

  /** Every label value this process can use, named accounts first: for series present from the start. */
  values(): string[] {
    return [...this.named, OTHER_ACCOUNTS];
  }
}
