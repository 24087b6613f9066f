/**
 * What the Nexus handlers (nexus/handlers.ts) refuse before anything starts, each a non-retryable
 * handler error the caller's workflow gets at once, never a retry:
 *  - bad input, an unknown or removed account, and every start the delivery workflow's own start
 *    check would refuse (activities/start-checks.ts, with the worker's registry and notification
 *    endpoints): BAD_REQUEST caused by the ApplicationFailure `InvalidDeliveryInput`, its details[0]
 *    the `{ field, message }` list;
 *  - an account the endpoint the request came through may not name (nexus/endpoint-accounts.ts):
 *    UNAUTHORIZED caused by `AccountNotAllowed`, the same details. Checked before the registry, so
 *    the answer never tells a caller whether another endpoint's account exists.
 */
import * as nexus from 'nexus-rpc';
import { ApplicationFailure } from '@temporalio/common';
import type { z } from 'zod';
import { deliveryInputIssues, type KnownAccounts } from '../activities/start-checks';
import type { DeliveryOrder } from '../contract/delivery-types';
import { WORKFLOW_FAILURE_TYPES } from '../contract/failures';
import { startAccount } from '../contract/workflow-ids';
import type { FieldIssue } from '../provider/schemas';
import { describeIssues, fieldIssues } from '../provider/validation';
import type { NexusEndpoints } from './endpoint-accounts';

/** The failure type of a request naming an account its endpoint does not serve. */
export const ACCOUNT_NOT_ALLOWED = 'AccountNotAllowed';

/** What the handlers check a request against: the worker's own configuration. Each left out, that check is not made. */
export interface NexusRefusalChecks {
  /** The worker's account registry: an account it does not have (unknown, or removed by a reload) is refused. */
  accounts?: KnownAccounts;
  /** The notification endpoint names of an account (notifications/targets.ts). */
  notifyEndpoints?: (account: string) => ReadonlySet<string>;
  /** The endpoints' account lists; unset, every endpoint serves every account. */
  endpoints?: NexusEndpoints;
}

/** Bad input: nothing was started or changed; the cause carries the workflow's own failure type and the issues. */
export function invalidInput(issues: FieldIssue[]): nexus.HandlerError {
  const message = `invalid delivery input, nothing was quoted or created: ${describeIssues(issues)}`;
  const cause = ApplicationFailure.create({ type: WORKFLOW_FAILURE_TYPES.invalidInput, message, nonRetryable: true, details: [issues] });
  return new nexus.HandlerError('BAD_REQUEST', message, { cause, retryableOverride: false });
}

/** The input parsed with the schema, or the BAD_REQUEST error naming each field (`prefix` before each path). */
export function parse<T extends z.ZodType>(schema: T, input: unknown, prefix = ''): z.output<T> {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  throw invalidInput(fieldIssues(parsed.error).map((i) => ({ ...i, field: i.field === '(body)' ? prefix.replace(/\.$/, '') || 'input' : prefix + i.field })));
}

/**
 * Refuses `account` when the endpoint the request came through (`operationInfo().endpoint`, named
 * by server 1.30 and later; empty before) may not name it. No endpoints file: nothing refused.
 */
export function checkEndpoint(checks: NexusRefusalChecks, endpoint: string, account: string | undefined): void {
  if (!checks.endpoints) return;
  const id = startAccount({ account });
  const allowed = checks.endpoints.get(endpoint)?.accounts;
  if (allowed?.has(id)) return;
  const why = !endpoint
    ? 'the Temporal server did not name the endpoint this request came through (server 1.30 or later does), so no account can be served while the endpoints have account lists'
    : allowed
      ? `not served through the Nexus endpoint ${endpoint}`
      : `the Nexus endpoint ${endpoint} serves no account here: it is not in this deployment's endpoints file`;
  const issues = [{ field: 'account', message: `account ${id}: ${why} (the operator lists each endpoint's accounts in DELIVERY_NEXUS_ENDPOINTS_FILE)` }];
  const message = `refused, nothing was quoted or created: ${describeIssues(issues)}`;
  const cause = ApplicationFailure.create({ type: ACCOUNT_NOT_ALLOWED, message, nonRetryable: true, details: [issues] });
  throw new nexus.HandlerError('UNAUTHORIZED', message, { cause, retryableOverride: false });
}

/**
 * createDelivery's check, before anything starts: the input's shape and clock rules; then the
 * endpoint's account list; then the workflow's own start check with the worker's registry and
 * notification endpoints (its first task would refuse the same). In that order, so a request
 * naming another endpoint's account learns nothing of it (not even its notification endpoints).
 */
export function checkCreateDelivery(checks: NexusRefusalChecks, input: unknown, endpoint: string, nowMs = Date.now()): void {
  refuseIssues(deliveryInputIssues(input, nowMs));
  checkEndpoint(checks, endpoint, (input as { account?: string }).account);
  refuseIssues(deliveryInputIssues(input, nowMs, checks.notifyEndpoints, checks.accounts));
}

/**
 * A reference that only stands in for the quote's missing one: a quote is checked as a delivery
 * of its order would be (the schema, the clock rules the courier applies to quotes too, the
 * account), so the issues name `order.<field>` and `account` as the quote's input does.
 */
const QUOTE_STAND_IN = 'quote';

/** quote's check, in createDelivery's order: the order's shape and clock rules, the endpoint's list, the registry. */
export function checkQuote(checks: NexusRefusalChecks, order: DeliveryOrder, account: string | undefined, endpoint: string, nowMs = Date.now()): void {
  const input = { reference: QUOTE_STAND_IN, order, account };
  refuseIssues(deliveryInputIssues(input, nowMs));
  checkEndpoint(checks, endpoint, account);
  refuseIssues(deliveryInputIssues(input, nowMs, undefined, checks.accounts));
}

function refuseIssues(issues: FieldIssue[]): void {
  if (issues.length > 0) throw invalidInput(issues);
}
