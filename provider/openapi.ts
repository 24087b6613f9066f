/**
 * The OpenAPI 3.1 document of the provider contract, generated from the zod schemas in
 * `schemas.ts` (OpenAPI 3.1 schemas are JSON Schema 2020-12, which zod emits directly).
 * Written to docs/openapi.json by `npm run openapi` and served by the simulator at /openapi.json.
 */
import { z } from 'zod';
import { PROVIDER_RATE_LIMITS } from './limits';
import { contractRegistry, DELIVERY_STATUSES } from './schemas';

type Json = Record<string, unknown>;
const ref = (id: string): Json => ({ $ref: `#/components/schemas/${id}` });
const json = (schema: Json, description: string): Json => ({ description, content: { 'application/json': { schema } } });
const error = (description: string): Json => json(ref('ErrorBody'), description);

const commonErrors = {
  '401': { $ref: '#/components/responses/Unauthorized' },
  '429': { $ref: '#/components/responses/RateLimited' },
  '500': { $ref: '#/components/responses/ProviderFault' },
};
const idParam = (name: string, description: string): Json => ({ name, in: 'path', required: true, description, schema: { type: 'string' } });
const queryParam = (name: string, schema: Json, description: string): Json => ({ name, in: 'query', required: false, description, schema });
const pageParam = queryParam('page', { type: 'integer', minimum: 1, default: 1 }, 'Page number, from 1.');

function componentSchemas(): Record<string, Json> {
  const { schemas } = z.toJSONSchema(contractRegistry, {
    target: 'draft-2020-12',
    uri: (id) => `#/components/schemas/${id}`,
    unrepresentable: 'any',
  });
  const out: Record<string, Json> = {};
  for (const [id, schema] of Object.entries(schemas)) {
    // Inside an OpenAPI document the dialect and identity come from the document itself.
    const { $schema: _s, $id: _i, ...rest } = schema as Json;
    out[id] = rest;
  }
  return out;
}

export function openApiDocument(servers: { url: string; description: string }[] = [{ url: 'http://127.0.0.1:4010', description: 'Local sandbox simulator' }]): Json {
  const c = PROVIDER_RATE_LIMITS;
  return {
    openapi: '3.1.0',
    info: {
      title: 'Delivery provider API (contract as used by delivery-orchestrator)',
      version: '1.0.0',
      description:
        'Generated from provider/schemas.ts. Parts the provider does not state are assumptions; see shared/provider-contract.md. ' +
        `Limits per API key over a rolling window: ${c.creations.limit} creations per ${c.creations.windowMs / 1000} s, ` +
        `${c.quotes.limit} quotes per ${c.quotes.windowMs / 1000} s, ${c.other.limit} other calls per ${c.other.windowMs / 1000} s.`,
    },
    servers,
    security: [{ bearer: [] }],
    paths: {
      '/v1/deliveries': {
        post: {
          operationId: 'createDelivery',
          summary: 'Create a delivery',
          parameters: [
            {
              name: 'Idempotency-Key',
              in: 'header',
              required: false,
              description: 'Same key and body within 24 h returns the first delivery (200); same key with another body is 409.',
              schema: { type: 'string', maxLength: 255 },
            },
          ],
          requestBody: { required: true, ...json(ref('CreateDeliveryRequest'), 'The delivery to create') },
          responses: {
            '201': json(ref('DeliveryRecord'), 'Created'),
            '200': json(ref('DeliveryRecord'), 'Idempotent replay: the delivery created earlier with this key'),
            '400': error('Malformed JSON'),
            '409': error('Idempotency key reused with a different body'),
            '413': error('Body over 1 MB'),
            '415': error('Not application/json'),
            '422': error('Validation failed; details name each field'),
            ...commonErrors,
          },
        },
        get: {
          operationId: 'listDeliveries',
          summary: 'List deliveries, newest first',
          parameters: [
            pageParam,
            queryParam('page_size', { type: 'integer', minimum: 1, maximum: 100, default: 20 }, 'Items per page.'),
            queryParam('status', { type: 'string', examples: [...DELIVERY_STATUSES] }, 'Only deliveries in this status.'),
            queryParam('reference_number', { type: 'string', maxLength: 64 }, 'Only deliveries with this reference number.'),
          ],
          responses: { '200': json(ref('DeliveryList'), 'A page of deliveries'), ...commonErrors },
        },
      },
      '/v1/deliveries/{id}': {
        parameters: [idParam('id', 'Delivery id')],
        get: {
          operationId: 'getDelivery',
          summary: 'Get a delivery',
          responses: { '200': json(ref('DeliveryRecord'), 'The delivery'), '404': error('Unknown id'), ...commonErrors },
        },
        patch: {
          operationId: 'updateDelivery',
          summary: 'Update a delivery (while CREATED or ASSIGNED)',
          requestBody: { required: true, ...json(ref('UpdateDeliveryRequest'), 'The fields to change') },
          responses: {
            '200': json(ref('DeliveryRecord'), 'The updated delivery'),
            '404': error('Unknown id'),
            '409': error('Not allowed in the current status'),
            '422': error('Validation failed'),
            ...commonErrors,
          },
        },
      },
      '/v1/deliveries/{id}/actions/cancel': {
        parameters: [idParam('id', 'Delivery id')],
        post: {
          operationId: 'cancelDelivery',
          summary: 'Cancel a delivery (before PICKED_UP)',
          responses: {
            '200': json(ref('DeliveryRecord'), 'The cancelled delivery'),
            '404': error('Unknown id'),
            '409': error('Already picked up, delivered or cancelled'),
            ...commonErrors,
          },
        },
      },
      '/v1/quotes': {
        post: {
          operationId: 'createQuote',
          summary: 'Instant quote',
          requestBody: { required: true, ...json(ref('CreateDeliveryRequest'), 'The same information as a creation') },
          responses: { '200': json(ref('Quote'), 'The quote, valid 15 minutes'), '422': error('Validation failed'), ...commonErrors },
        },
      },
      '/v1/orders': {
        get: {
          operationId: 'listOrders',
          summary: 'List orders',
          parameters: [queryParam('delivery_id', { type: 'string' }, 'Only the order of this delivery.'), pageParam],
          responses: { '200': json(ref('OrderList'), 'A page of orders'), ...commonErrors },
        },
      },
      '/v1/orders/{id}': {
        parameters: [idParam('id', 'Order id')],
        get: {
          operationId: 'getOrder',
          summary: 'Get an order',
          responses: { '200': json(ref('OrderRecord'), 'The order'), '404': error('Unknown id'), ...commonErrors },
        },
      },
      '/v1/health/token': {
        get: {
          operationId: 'checkKey',
          summary: 'Check an API key',
          responses: { '200': json(ref('KeyCheck'), 'The key is valid'), '401': { $ref: '#/components/responses/Unauthorized' } },
        },
      },
    },
    webhooks: {
      statusChanged: {
        post: {
          summary: 'A delivery or destination changed status (Standard Webhooks signature)',
          parameters: ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => ({ name, in: 'header', required: true, schema: { type: 'string' } })),
          requestBody: { required: true, ...json(ref('WebhookEvent'), 'The event') },
          responses: { '200': { description: 'Any 2xx acknowledges; anything else is retried, 7 attempts in all' } },
        },
      },
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <API_KEY>' } },
      responses: {
        Unauthorized: error('Missing or invalid API key'),
        RateLimited: {
          ...error('Rate limited; wait Retry-After seconds'),
          headers: {
            'Retry-After': { description: 'Seconds until a slot frees', schema: { type: 'integer', minimum: 0 } },
            'Retry-After-Ms': { description: 'Simulator extension: the same wait in milliseconds', schema: { type: 'integer', minimum: 0 } },
          },
        },
        ProviderFault: error('Provider fault; retry later'),
      },
      schemas: componentSchemas(),
    },
  };
}
