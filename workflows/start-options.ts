/**
 * How a delivery workflow is started, by the client library and by the Nexus operation alike:
 * its deterministic ID, a reference used once ever within its account (REJECT_DUPLICATE: a
 * finished delivery is not started again either), its summary and its priority. One search
 * attribute at most: DeliveryAccount, for an account other than `default` (the operator's first
 * filter, there from the start); the rest the workflow sets with its first upsert, whoever
 * started it (workflows/search-attributes.ts says why: a start with search attributes is taken
 * slower, so the default account's starts, the only ones before accounts, stay without).
 */
import { TypedSearchAttributes } from '@temporalio/common';
import { DEFAULT_ACCOUNT } from '../contract/accounts';
import type { DeliveryWorkflowInput } from '../contract/delivery-types';
import { accountPriority } from '../contract/priorities';
import { DeliveryAccount } from '../contract/search-attributes';
import { deliveryWorkflowId } from '../contract/workflow-ids';
import { deliveryStaticDetails, deliverySummary } from './details';

export function deliveryStartOptions(input: DeliveryWorkflowInput) {
  const account = input.account ?? DEFAULT_ACCOUNT;
  return {
    workflowId: deliveryWorkflowId(input.reference, account),
    ...(account !== DEFAULT_ACCOUNT && { typedSearchAttributes: new TypedSearchAttributes([{ key: DeliveryAccount, value: account }]) }),
    args: [input] as [DeliveryWorkflowInput],
    workflowIdReusePolicy: 'REJECT_DUPLICATE' as const,
    staticSummary: deliverySummary(input),
    staticDetails: deliveryStaticDetails(input),
    // Food first; within a priority, the account as fairness key (its workflow tasks and, inherited, its calls).
    priority: accountPriority(input.order.is_food, account),
  };
}
