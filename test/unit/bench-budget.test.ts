/**
 * The benchmarks' line budget (issue #35): bench/ stays at most 2,300 lines of TypeScript, its
 * results not counted, the same figure as `wc -l bench/*.ts bench/**\/*.ts` in a shell without globstar.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const BENCH = join(__dirname, '..', '..', 'bench');
const BUDGET = 2_300;

const benchLines = () => {
  const files = readdirSync(BENCH, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts') && !f.startsWith('results'));
  expect(files.length).toBeGreaterThan(0);
  return files.reduce((n, f) => n + (readFileSync(join(BENCH, f), 'utf8').match(/\n/g)?.length ?? 0), 0);
};

it(`keeps bench/ within its budget of ${BUDGET} lines`, () => {
  expect(benchLines()).toBeLessThanOrEqual(BUDGET);
});
