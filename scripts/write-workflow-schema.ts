/** Writes docs/workflow-contract.json from the workflow's zod schemas (`npm run workflow-schema`). */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { workflowContractDocument } from './workflow-contract';

const target = join(__dirname, '..', 'docs', 'workflow-contract.json');
writeFileSync(target, JSON.stringify(workflowContractDocument(), null, 2) + '\n');
console.log(`wrote ${target}`);
