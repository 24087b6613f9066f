/** Writes docs/openapi.json from the contract's zod schemas (`npm run openapi`). */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openApiDocument } from '../provider/openapi';

const target = join(__dirname, '..', 'docs', 'openapi.json');
writeFileSync(target, JSON.stringify(openApiDocument(), null, 2) + '\n');
console.log(`wrote ${target}`);
