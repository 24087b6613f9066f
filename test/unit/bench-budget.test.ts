/**
 * The benchmarks' line budget: bench/ stays at most 2,550 lines of TypeScript (issue #35's 2,300,
 * plus this round's: the accounts benchmark's idle phase at 10,000 accounts and the sampling
 * fleets of the limits benchmark, issues #53 and #54), its results not counted, the same figure as `wc -l bench/*.ts bench/**\/*.ts` in a shell without globstar.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const BENCH = join(__dirname, '..', '..', 'bench');
const BUDGET = 2_550;

const benchLines = () => {
  const files = readdirSync(BENCH, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts') && !f.startsWith('results'));
  expect(files.length).toBeGreaterThan(0);
  return files.reduce((n, f) => n + (readFileSync(join(BENCH, f), 'utf8').match(/\n/g)?.length ?? 0), 0);
};

it(`keeps bench/ within its budget of ${BUDGET} lines`, () => {
  expect(benchLines()).toBeLessThanOrEqual(BUDGET);
});
