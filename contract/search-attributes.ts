/**
 * The search attributes a delivery workflow sets, so operators can find any delivery in the
 * Temporal Web UI by reference, provider id or status. None of them holds personal data.
 * The local dev server registers exactly these (scripts/temporal-dev-server.ts reads this list).
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const OrderReference = defineSearchAttributeKey('OrderReference', SearchAttributeType.KEYWORD);
export const DeliveryId = defineSearchAttributeKey('DeliveryId', SearchAttributeType.KEYWORD);
export const DeliveryStatus = defineSearchAttributeKey('DeliveryStatus', SearchAttributeType.KEYWORD);
export const IsFood = defineSearchAttributeKey('IsFood', SearchAttributeType.BOOL);
export const DestinationCount = defineSearchAttributeKey('DestinationCount', SearchAttributeType.INT);
export const QuotedPrice = defineSearchAttributeKey('QuotedPrice', SearchAttributeType.INT);

export const DELIVERY_SEARCH_ATTRIBUTES = [OrderReference, DeliveryId, DeliveryStatus, IsFood, DestinationCount, QuotedPrice] as const;
