/**
 * How a delivery workflow is started, by the client library and by the Nexus operation alike:
 * its deterministic ID, a reference used once ever within its account (REJECT_DUPLICATE: a
 * finished delivery is not started again either), its summary and its priority. One search
 * attribute: DeliveryAccount, every account's, `default`'s too (the operator's first filter,
 * there from the start); the rest the workflow sets with its first upsert, whoever started it
 * (workflows/search-attributes.ts says why).
 */
import { TypedSearchAttributes } from '@temporalio/common';
import type { DeliveryWorkflowInput } from '../contract/delivery-types';
import { accountPriority } from '../contract/priorities';
import { DeliveryAccount } from '../contract/search-attributes';
import { deliveryWorkflowId, startAccount } from '../contract/workflow-ids';
import { deliveryStaticDetails, deliverySummary } from './details';

export function deliveryStartOptions(input: DeliveryWorkflowInput) {
  const account = startAccount(input);
  return {
    workflowId: deliveryWorkflowId(input.reference, account),
    typedSearchAttributes: new TypedSearchAttributes([{ key: DeliveryAccount, value: account }]),
    args: [input] as [DeliveryWorkflowInput],
    workflowIdReusePolicy: 'REJECT_DUPLICATE' as const,
    staticSummary: deliverySummary(input),
    staticDetails: deliveryStaticDetails(input),
    // Food first; within a priority, the account as fairness key (its workflow tasks and, inherited, its calls).
    priority: accountPriority(input.order.is_food, account),
  };
}
