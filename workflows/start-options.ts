/**
 * How a delivery workflow is started, by the client library and by the Nexus operation alike:
 * its deterministic ID, a reference used once ever (REJECT_DUPLICATE: a finished delivery is not
 * started again either), its summary and its priority. No search attributes: the workflow sets
 * them with its first upsert, whoever started it (workflows/search-attributes.ts says why).
 */
import type { DeliveryWorkflowInput } from '../contract/delivery-types';
import { deliveryPriority } from '../contract/priorities';
import { deliveryWorkflowId } from '../contract/workflow-ids';
import { deliveryStaticDetails, deliverySummary } from './details';

export function deliveryStartOptions(input: DeliveryWorkflowInput) {
  return {
    workflowId: deliveryWorkflowId(input.reference),
    args: [input] as [DeliveryWorkflowInput],
    workflowIdReusePolicy: 'REJECT_DUPLICATE' as const,
    staticSummary: deliverySummary(input),
    staticDetails: deliveryStaticDetails(input),
    priority: deliveryPriority(input.order.is_food),
  };
}
