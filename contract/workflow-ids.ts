/**
 * Addresses: workflow IDs, deterministic, so the bridge, operators and workers address a workflow
 * without looking it up, and the courier's webhook URLs. The `default` account differs from the
 * others here (and in being the one the environment defines without a registry: accounts/registry.ts)
 * only: its deliveries, its gate and its webhook URL keep the forms of 0.2.0, from before accounts,
 * and a start that names no account is its.
 */
import { DEFAULT_ACCOUNT } from './accounts';

const DEFAULT_PREFIX = 'delivery:';
const ACCOUNT_PREFIX = 'delivery@';

/**
 * `delivery:<reference>` for the `default` account (the form before accounts existed), and
 * `delivery@<account>:<reference>` for every other: the two forms differ at their 9th character,
 * and an account id never holds `:`, so the first `:` ends it. No two (account, reference) pairs
 * share an ID.
 */
export function deliveryWorkflowId(reference: string, account: string = DEFAULT_ACCOUNT): string {
  return account === DEFAULT_ACCOUNT ? `${DEFAULT_PREFIX}${reference}` : `${ACCOUNT_PREFIX}${account}:${reference}`;
}

/** The account and reference a delivery workflow ID names; undefined for any other ID. */
export function parseDeliveryWorkflowId(workflowId: string): { account: string; reference: string } | undefined {
  if (workflowId.startsWith(DEFAULT_PREFIX)) return { account: DEFAULT_ACCOUNT, reference: workflowId.slice(DEFAULT_PREFIX.length) };
  if (!workflowId.startsWith(ACCOUNT_PREFIX)) return undefined;
  const colon = workflowId.indexOf(':', ACCOUNT_PREFIX.length);
  if (colon <= ACCOUNT_PREFIX.length) return undefined;
  return { account: workflowId.slice(ACCOUNT_PREFIX.length, colon), reference: workflowId.slice(colon + 1) };
}

/** The account a start names; none: `default`, whose deliveries keep the ID form of 0.2.0. */
export function startAccount(input: { account?: string }): string {
  return input.account ?? DEFAULT_ACCOUNT;
}

/**
 * The courier account of a delivery workflow's ID, or of a pacing gate's on `gateQueue` (the
 * deliveries' task queue). Any other ID is an error naming it: a workflow that says nothing of its
 * account must name it explicitly, never be given another account's key.
 */
export function accountOfWorkflowId(workflowId: string, gateQueue?: string): string {
  const account = parseDeliveryWorkflowId(workflowId)?.account ?? (gateQueue === undefined ? undefined : parseGateWorkflowId(workflowId, gateQueue));
  if (account === undefined) throw new Error(`workflow ID ${JSON.stringify(workflowId)} names no courier account (neither delivery:<reference>, delivery@<account>:<reference> nor a pacing gate's): its calls must name their account`);
  return account;
}

export function referenceFromWorkflowId(workflowId: string): string | undefined {
  return parseDeliveryWorkflowId(workflowId)?.reference;
}

/** One gate per task queue and account (each account's limits are its key's): `pacing-gate:<queue>`, `pacing-gate:<queue>@<account>`. */
export function gateWorkflowId(taskQueue: string, account: string = DEFAULT_ACCOUNT): string {
  return account === DEFAULT_ACCOUNT ? `pacing-gate:${taskQueue}` : `pacing-gate:${taskQueue}@${account}`;
}

/** The account of the gate `workflowId` of `taskQueue` (the deliveries' queue); undefined for any other ID. The queue is given: a queue's name may hold `@`. */
export function parseGateWorkflowId(workflowId: string, taskQueue: string): string | undefined {
  const own = gateWorkflowId(taskQueue);
  if (workflowId === own) return DEFAULT_ACCOUNT;
  return workflowId.startsWith(`${own}@`) ? workflowId.slice(own.length + 1) : undefined;
}

/** Where the courier sends an account's webhooks (the bridge's URL path): `/webhooks/delivery/<account>`, and 0.2.0's `/webhooks/delivery` for `default`. */
export const WEBHOOK_PATH = '/webhooks/delivery';

export function accountWebhookPath(account: string): string {
  return `${WEBHOOK_PATH}/${account}`;
}

/** The account a webhook URL path names, and the path's form (a metric label); undefined for any other path. */
export function parseWebhookPath(path: string): { account: string; route: string } | undefined {
  if (path === WEBHOOK_PATH) return { account: DEFAULT_ACCOUNT, route: WEBHOOK_PATH };
  if (path.startsWith(`${WEBHOOK_PATH}/`) && !path.includes('/', WEBHOOK_PATH.length + 1)) return { account: path.slice(WEBHOOK_PATH.length + 1), route: `${WEBHOOK_PATH}/{account}` };
  return undefined;
}
