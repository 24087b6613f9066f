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
import { DEFAULT_ACCOUNT } from '../contract/accounts';
import { currentAccount, type NotifyTargets } from '../notifications/targets';

const NO_ENDPOINTS: ReadonlySet<string> = new Set();

export interface StartCheckActivities {
  /** Every contract issue of a delivery workflow's input, `[]` when it is valid. Never throws for bad input. */
  checkDeliveryInput(input: unknown): Promise<FieldIssue[]>;
}

/**
 * `notifyEndpoints`: the endpoint names the delivery's account has (its registry entry's `notify`,
 * or DELIVERY_NOTIFY_ENDPOINTS for `default`); a start naming another, another account's included,
 * is refused before anything is quoted or created. Left out (a check made where the configuration
 * is not known), the workflow's own start check decides.
 */
export function deliveryInputIssues(input: unknown, nowMs: number, notifyEndpoints?: ReadonlySet<string>, account: string = DEFAULT_ACCOUNT): FieldIssue[] {
  const parsed = DeliveryWorkflowInputSchema.safeParse(input);
  if (!parsed.success) return fieldIssues(parsed.error).map((i) => (i.field === '(body)' ? { ...i, field: 'input' } : i));
  const issues = pickupTimeIssues(parsed.data.order.desired_pickup_time, nowMs).map((i) => ({ ...i, field: `order.${i.field}` }));
  const endpoint = parsed.data.notify?.endpoint;
  if (endpoint !== undefined && notifyEndpoints !== undefined && !notifyEndpoints.has(endpoint)) {
    const known = notifyEndpoints.size > 0 ? `configured: ${[...notifyEndpoints].join(', ')}` : 'none is configured';
    const where = account === DEFAULT_ACCOUNT ? 'the operator sets DELIVERY_NOTIFY_ENDPOINTS' : `account ${account}'s own; the operator sets them in the account registry`;
    issues.push({ field: 'notify.endpoint', message: `no notification endpoint named ${endpoint} (${known}; ${where})` });
  }
  return issues;
}

/**
 * `notify`: each account's endpoints (notifications/targets.ts), or the names of the `default`
 * account's (DELIVERY_NOTIFY_ENDPOINTS). The account is the one the workflow ID names.
 */
export function createStartCheckActivities(notify: ReadonlySet<string> | NotifyTargets = new Set()): StartCheckActivities {
  const names = notify instanceof Set ? (account: string) => (account === DEFAULT_ACCOUNT ? notify : NO_ENDPOINTS) : (account: string) => (notify as NotifyTargets).names(account);
  return {
    async checkDeliveryInput(input) {
      const account = currentAccount();
      return deliveryInputIssues(input, Date.now(), names(account), account);
    },
  };
}
