/**
 * The delivery workflow's start check, run as a local activity in the workflow's first task:
 * the input checked with the contract's zod schemas (contract/schemas.ts) and the clock rules
 * (provider/rules.ts), whoever started the workflow (the client library, the Temporal CLI, any
 * SDK). It runs in the worker's own thread, where zod is loaded once, not in every workflow's
 * sandbox (27 ms and 1 MiB per instance, on every replay too); its answer is recorded in the
 * history, so a later change of the rules cannot make a running workflow's replay diverge.
 */
import { pickupTimeIssues } from '../provider/rules';
import type { FieldIssue } from '../provider/schemas';
import { fieldIssues } from '../provider/validation';
import { DeliveryWorkflowInputSchema } from '../contract/schemas';
import { startAccount } from '../contract/workflow-ids';
import type { AccountRegistry } from '../accounts/registry';
import type { NotifyTargets } from '../notifications/targets';

export interface StartCheckActivities {
  /** Every contract issue of a delivery workflow's input, `[]` when it is valid. Never throws for bad input. */
  checkDeliveryInput(input: unknown): Promise<FieldIssue[]>;
}

/** The accounts a worker serves (accounts/registry.ts): only whether one is known. */
export type KnownAccounts = Pick<AccountRegistry, 'get'>;

/**
 * `notifyEndpoints`: the endpoint names this worker's configuration has (DELIVERY_NOTIFY_ENDPOINTS),
 * or, per account, the names the start's account has (its registry entry's `notify`); a start
 * naming another, another account's included, is refused before anything is quoted or created. `accounts`: the
 * worker's registry; a start for an account it does not have is refused the same way. Left out (a
 * check made where the configuration is not known), the workflow's own start check decides.
 */
export function deliveryInputIssues(input: unknown, nowMs: number, notifyEndpoints?: ReadonlySet<string> | ((account: string) => ReadonlySet<string>), accounts?: KnownAccounts): FieldIssue[] {
  const parsed = DeliveryWorkflowInputSchema.safeParse(input);
  if (!parsed.success) return fieldIssues(parsed.error).map((i) => (i.field === '(body)' ? { ...i, field: 'input' } : i));
  const issues = pickupTimeIssues(parsed.data.order.desired_pickup_time, nowMs).map((i) => ({ ...i, field: `order.${i.field}` }));
  const account = startAccount(parsed.data);
  if (accounts !== undefined && !accounts.get(account)) {
    // Not the list of accounts: a caller learns only that this one is not served here.
    issues.push({ field: 'account', message: `no courier account ${account} in this deployment's registry (the operator lists accounts in DELIVERY_ACCOUNTS_FILE)` });
  }
  const endpoint = parsed.data.notify?.endpoint;
  const names = typeof notifyEndpoints === 'function' ? notifyEndpoints(account) : notifyEndpoints;
  if (endpoint !== undefined && names !== undefined && !names.has(endpoint)) {
    const known = names.size > 0 ? `configured: ${[...names].join(', ')}` : 'none is configured';
    issues.push({ field: 'notify.endpoint', message: `no notification endpoint named ${endpoint} (${known}; account ${account}'s own: the operator sets them in its registry entry, or in DELIVERY_NOTIFY_ENDPOINTS without a registry)` });
  }
  return issues;
}

/**
 * `notify`: each account's endpoints (notifications/targets.ts); the account is the start's.
 * `onRefused`: told the account a refused start named (its metric: a refusal is also a failed workflow).
 */
export function createStartCheckActivities(notify: NotifyTargets, accounts?: KnownAccounts, onRefused?: (account: string) => void): StartCheckActivities {
  return {
    async checkDeliveryInput(input) {
      const issues = deliveryInputIssues(input, Date.now(), (account) => notify.names(account), accounts);
      if (issues.length > 0 && onRefused) {
        const named = (input as { account?: unknown } | null)?.account;
        onRefused(typeof named === 'string' ? named : startAccount({}));
      }
      return issues;
    },
  };
}
