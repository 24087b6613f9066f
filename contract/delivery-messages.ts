/** The delivery workflow's signal, query and updates, as the bridge, the client library and the CLI send them. */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { UpdateDeliveryRequest } from '../provider/schemas';
import type { DeliveryState, StatusChange } from './delivery-types';

export const statusChangedSignal = defineSignal<[StatusChange]>('statusChanged');
export const statusQuery = defineQuery<DeliveryState>('status');
export const updateDeliveryUpdate = defineUpdate<DeliveryState, [UpdateDeliveryRequest]>('updateDelivery');
export const approveQuoteUpdate = defineUpdate<DeliveryState, []>('approveQuote');
export const rejectQuoteUpdate = defineUpdate<DeliveryState, [reason: string]>('rejectQuote');
/**
 * Sent with the start (Update-with-Start) by the client library: completes once the workflow's
 * start check has passed, or fails with its InvalidDeliveryInput refusal, so that the caller learns
 * of a refused start (an unknown account, a bad field) from the start call itself.
 */
export const startCheckedUpdate = defineUpdate<void, []>('startChecked');
