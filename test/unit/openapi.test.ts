import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { validate } from '@readme/openapi-parser';
import { openApiDocument } from '../../provider/openapi';

const checkedIn = JSON.parse(readFileSync(join(__dirname, '../../docs/openapi.json'), 'utf8'));

describe('the OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    // The validator resolves every $ref and checks the document against the 3.1 meta-schema.
    const result = await validate(structuredClone(openApiDocument()) as Parameters<typeof validate>[0]);
    expect(result).toMatchObject({ valid: true, specification: 'OpenAPI' });
    expect(openApiDocument().openapi).toBe('3.1.0');
  });

  it('in docs/ matches the schemas (run `npm run openapi` after changing provider/schemas.ts)', () => {
    expect(checkedIn).toEqual(openApiDocument());
  });

  it('describes every call family of the contract', () => {
    const ops = Object.values(checkedIn.paths as Record<string, Record<string, { operationId?: string }>>)
      .flatMap((p) => Object.values(p))
      .map((o) => o.operationId)
      .filter(Boolean)
      .sort();
    expect(ops).toEqual(['cancelDelivery', 'checkKey', 'createDelivery', 'createQuote', 'getDelivery', 'getOrder', 'listDeliveries', 'listOrders', 'updateDelivery']);
  });

  it('carries the contract limits into the schemas', () => {
    const s = checkedIn.components.schemas;
    expect(s.CreateDeliveryRequest.properties.destinations.maxItems).toBe(100);
    expect(s.DestinationLocation.properties.phone.pattern).toBe('^\\+[1-9]\\d{1,14}$');
    expect(s.PackageType.enum).toEqual(['SMALL', 'MEDIUM', 'LARGE', 'XLARGE']);
    expect(s.Price.properties.amount.type).toBe('integer');
  });
});
