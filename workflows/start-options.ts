/**
 * How a delivery workflow is started, by the client library and by the Nexus operation alike:
 * its deterministic ID, a reference used once ever (REJECT_DUPLICATE: a finished delivery is not
 * started again either), the search attributes visible at once (the workflow sets them itself in
 * its first task too, for starters in other languages), its summary and its priority.
 */
import { TypedSearchAttributes } from '@temporalio/common';
import type { DeliveryWorkflowInput } from '../contract/delivery-types';
import { deliveryPriority } from '../contract/priorities';
import * as SearchAttributes from '../contract/search-attributes';
import { deliveryWorkflowId } from '../contract/workflow-ids';
import { deliveryStaticDetails, deliverySummary } from './details';

export function deliveryStartOptions(input: DeliveryWorkflowInput) {
  return {
    workflowId: deliveryWorkflowId(input.reference),
    args: [input] as [DeliveryWorkflowInput],
    workflowIdReusePolicy: 'REJECT_DUPLICATE' as const,
    typedSearchAttributes: new TypedSearchAttributes([
      { key: SearchAttributes.OrderReference, value: input.reference },
      { key: SearchAttributes.IsFood, value: input.order.is_food },
      { key: SearchAttributes.DestinationCount, value: input.order.destinations.length },
    ]),
    staticSummary: deliverySummary(input),
    staticDetails: deliveryStaticDetails(input),
    priority: deliveryPriority(input.order.is_food),
  };
}
