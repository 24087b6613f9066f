/**
 * The search attributes a delivery workflow sets, so operators can find any delivery in the
 * Temporal Web UI by reference, provider id or status. None of them holds personal data.
 * The local dev server registers exactly these (scripts/temporal-dev-server.ts reads this list).
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const OrderReference = defineSearchAttributeKey('OrderReference', SearchAttributeType.KEYWORD);
export const DeliveryId = defineSearchAttributeKey('DeliveryId', SearchAttributeType.KEYWORD);
export const DeliveryStatus = defineSearchAttributeKey('DeliveryStatus', SearchAttributeType.KEYWORD);
/**
 * When the delivery entered its DeliveryStatus (the workflow's clock at the change), set in the
 * same upsert as DeliveryStatus: no extra command, no extra billed action. The fleet view ages
 * each status's oldest by it: a delivery 40 minutes old that has just been delivered is not stuck.
 */
export const DeliveryStatusSince = defineSearchAttributeKey('DeliveryStatusSince', SearchAttributeType.DATETIME);
export const IsFood = defineSearchAttributeKey('IsFood', SearchAttributeType.BOOL);
export const DestinationCount = defineSearchAttributeKey('DestinationCount', SearchAttributeType.INT);
/** The courier account (contract/accounts.ts): set at start for an account other than `default`, and by the delivery's first upsert for every one. */
export const DeliveryAccount = defineSearchAttributeKey('DeliveryAccount', SearchAttributeType.KEYWORD);
export const QuotedPrice = defineSearchAttributeKey('QuotedPrice', SearchAttributeType.INT);

/**
 * When a delivery upserts DeliveryStatus (DELIVERY_STATUS_SEARCH): `every` (the default), on every
 * change of the delivery's status (one upsert each, a billed action on Temporal Cloud), so open
 * deliveries are found by status; `final`, once, with the status it ends in.
 */
export const STATUS_SEARCH = ['final', 'every'] as const;
export type StatusSearch = (typeof STATUS_SEARCH)[number];

export const DELIVERY_SEARCH_ATTRIBUTES = [OrderReference, DeliveryId, DeliveryStatus, IsFood, DestinationCount, QuotedPrice, DeliveryAccount, DeliveryStatusSince] as const;
