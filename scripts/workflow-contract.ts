/**
 * docs/workflow-contract.json: the delivery workflow's contract for clients in any language, as
 * JSON Schema 2020-12 generated from the zod schemas in contract/schemas.ts and nexus/schemas.ts (`npm run workflow-schema`),
 * with what a client needs besides the shapes: names, IDs, search attributes, failure types.
 * Checked equal to the generated document by test/unit/workflow-contract.test.ts.
 */
import { z } from 'zod';
import { workflowContractRegistry } from '../contract/schemas';
import { ACCOUNT_PAUSED, UNKNOWN_ACCOUNT, NON_RETRYABLE_PROVIDER_FAILURES, PROVIDER_FAILURE_TYPES, WORKFLOW_FAILURE_TYPES } from '../contract/failures';
import { DELIVERY_SEARCH_ATTRIBUTES } from '../contract/search-attributes';
import { DEFAULT_TASK_QUEUE } from '../contract/task-queues';
import { nexusServiceDocument } from '../nexus/schemas';

type Json = Record<string, unknown>;
const ref = (id: string): Json => ({ $ref: `#/$defs/${id}` });

function definitions(): Record<string, Json> {
  const { schemas } = z.toJSONSchema(workflowContractRegistry, { target: 'draft-2020-12', uri: (id) => `#/$defs/${id}`, unrepresentable: 'any' });
  const out: Record<string, Json> = {};
  for (const [id, schema] of Object.entries(schemas)) {
    const { $schema: _s, $id: _i, ...rest } = schema as Json;
    out[id] = rest;
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
}

const WITH_FIRST_UPSERT = "set by the workflow with its first upsert: at the creation, or when the quote waits for approval, or at the end of a delivery that was never created; at once when the start is refused (OrderReference). Not at start: on the dev server's SQLite visibility any custom search attribute slows starts by about 13 %";
const SEARCH_ATTRIBUTE_NOTES: Record<string, string> = {
  OrderReference: `the reference; ${WITH_FIRST_UPSERT}`,
  IsFood: `order.is_food; ${WITH_FIRST_UPSERT}`,
  DestinationCount: `number of destinations; ${WITH_FIRST_UPSERT}`,
  DeliveryId: "the provider's delivery id, once created",
  DeliveryStatus: 'the delivery\'s status, set on every change (only the status it ended in with the worker setting DELIVERY_STATUS_SEARCH=final)',
  DeliveryStatusSince: 'when the delivery entered its DeliveryStatus (the workflow\'s time), set in the same upsert as DeliveryStatus',
  QuotedPrice: 'quoted price in minor units, once quoted',
  DeliveryAccount: `the courier account; set at start for an account other than \`default\` (the starter sets it: workflows/start-options.ts), ${WITH_FIRST_UPSERT} for \`default\``,
};

export function workflowContractDocument(): Json {
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: 'urn:delivery-orchestrator:workflow-contract',
    title: 'The delivery workflow, for Temporal clients in any language',
    description:
      'Generated from contract/schemas.ts. Start the workflow type `delivery` by name with one JSON argument (DeliveryWorkflowInput), ' +
      'follow it with the `status` query, change it with the updates, cancel it with workflow cancellation. See docs/any-language.md. ' +
      'Payloads are JSON (`json/plain`), encrypted as docs/payload-encryption.md says when the deployment sets DELIVERY_PAYLOAD_KEYS.',
    'x-temporal-workflow': {
      workflowType: 'delivery',
      taskQueue: `${DEFAULT_TASK_QUEUE} (DELIVERY_TASK_QUEUE of the deployment)`,
      workflowId: 'delivery:<reference> for the account default, delivery@<account>:<reference> for any other; any other ID is refused with InvalidDeliveryInput',
      workflowIdReusePolicy: 'REJECT_DUPLICATE (a reference is used once, ever)',
      input: ref('DeliveryWorkflowInput'),
      result: ref('DeliveryState'),
      priority: 'priorityKey 1 for food orders, 3 for others (the workflow cannot set its own priority; starters should)',
      staticSummary: 'optional, for the Web UI: e.g. "2 stops · food · ref A-1042"; never personal data',
      cancellation: 'cancel the workflow: before creation nothing is created; after, the delivery is cancelled at the provider, or, if the provider refuses, followed to its real end (DeliveryState.cancellation says which)',
      queries: { status: { args: [], result: ref('DeliveryState') } },
      updates: {
        updateDelivery: { args: [ref('UpdateDeliveryRequest')], result: ref('DeliveryState'), allowed: 'while phase is following and status CREATED or ASSIGNED; rejected before it reaches history otherwise' },
        approveQuote: { args: [], result: ref('DeliveryState'), allowed: 'while phase is awaiting_approval' },
        rejectQuote: { args: [ref('RejectReason')], result: ref('DeliveryState'), allowed: 'while phase is awaiting_approval' },
        startChecked: { args: [], result: 'null', allowed: 'sent with the start (Update-with-Start, conflict policy FAIL): completes once the start check passes, fails with InvalidDeliveryInput when it refuses the start (the workflow then ends)' },
      },
      signals: { statusChanged: { args: [ref('StatusChange')], sentBy: 'the webhook bridge' } },
      searchAttributes: DELIVERY_SEARCH_ATTRIBUTES.map((k) => ({ name: k.name, type: k.type, meaning: SEARCH_ATTRIBUTE_NOTES[k.name] })),
      failures: {
        [WORKFLOW_FAILURE_TYPES.invalidInput]: 'non-retryable; the input or workflow ID broke the contract; details[0] is [{ field, message }], nothing was quoted or created',
        [WORKFLOW_FAILURE_TYPES.quoteRejected]: 'non-retryable; rejectQuote was called; nothing was created',
        [WORKFLOW_FAILURE_TYPES.quoteNotApproved]: 'non-retryable; no approval within approvalTimeoutMs; nothing was created',
        [WORKFLOW_FAILURE_TYPES.currencyMismatch]: 'non-retryable; maxPrice is in another currency than the quote; nothing was created',
        ...Object.fromEntries(
          Object.values(PROVIDER_FAILURE_TYPES).map((t) => [t, `the provider's answer, as the cause of an activity failure${NON_RETRYABLE_PROVIDER_FAILURES.includes(t) ? ' (non-retryable)' : ' (retried by the workflow)'}`]),
        ),
        [UNKNOWN_ACCOUNT]: "non-retryable for a quote (or a delivery's first pacing request): the worker's registry has no such account; a running delivery's calls retry it (the operator may add the account back)",
        [ACCOUNT_PAUSED]: "the cause of an activity failure while the courier refuses the account's key (401) and the account is paused: the call waits for the account's next probe (retried by the workflow, never final; docs/accounts.md)",
      },
    },
    // The same operations for callers in another namespace, through a Nexus endpoint (nexus/service.ts).
    'x-temporal-nexus': nexusServiceDocument(ref),
    $defs: definitions(),
  };
}
