/**
 * Courier accounts (docs/accounts.md): one deployment serves many, each with its own key, limits,
 * webhook secrets and notification endpoints (accounts/registry.ts holds them, worker-side). Only
 * the account's id travels through Temporal: in start inputs, workflow IDs and the search
 * attribute `DeliveryAccount`; never its key or secrets. No zod here: workflow code imports this
 * eagerly, and zod is loaded lazily in workflows (workflows/delivery.ts, contractSchemas).
 */

/** The account a delivery belongs to when its start names none; with no registry file, the only one. */
export const DEFAULT_ACCOUNT = 'default';

/** Lower-case letters, digits and `-`: safe in workflow IDs, URLs, metric labels and file names, and never holds `:` or `@`. */
export const ACCOUNT_ID = /^[a-z0-9-]{1,40}$/;
export const ACCOUNT_ID_RULE = 'must be 1 to 40 of a-z, 0-9 and -';
