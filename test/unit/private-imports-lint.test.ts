/**
 * The lint rule that keeps dependencies on their public APIs (eslint.config.mjs, publicApisOnly)
 * fires on a private import and on a reach into the SDK's workflow runtime, and leaves public
 * entries alone: `eslint` itself, run on small fixtures given on its standard input.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');
const ESLINT = join(ROOT, 'node_modules', '.bin', 'eslint');

/** The messages eslint gives a file of this text at `path` (it exits 1 when it finds errors: read its report either way). */
async function lint(path: string, text: string): Promise<string[]> {
  const { stdout, stderr, status } = spawnSync(ESLINT, ['--format', 'json', '--stdin', '--stdin-filename', path], { cwd: ROOT, input: text, encoding: 'utf8' });
  if (status !== 0 && status !== 1) throw new Error(`eslint failed (${status}): ${stderr}`);
  return (JSON.parse(stdout) as { messages: { ruleId: string | null; message: string }[] }[]).flatMap((r) => r.messages.map((m) => `${m.ruleId}: ${m.message}`));
}

it('fails a private path of a package, by import, require, require.resolve or import()', async () => {
  const fixture = [
    "import { extractContextFromHeaders } from '@temporalio/interceptors-opentelemetry/lib/instrumentation';",
    "import { tsToMs } from '@temporalio/common/lib/time';",
    "import x from 'some-package/dist/internal';",
    "const y = require('@temporalio/worker/lib/workflow/bundler');",
    "export const m = require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors');",
    "export const z = () => import('other/lib/thing');",
    'export { extractContextFromHeaders, tsToMs, x, y };',
  ].join('\n');
  const messages = await lint('tracing/fixture.ts', fixture);
  expect(messages.filter((m) => /private path/.test(m))).toHaveLength(6);
});

it('fails a reach into the SDK’s workflow runtime', async () => {
  const messages = await lint('workflows/fixture.ts', "const a = (globalThis as { __TEMPORAL_ACTIVATOR__?: object }).__TEMPORAL_ACTIVATOR__;\nexport const b = (globalThis as Record<string, unknown>)['__TEMPORAL__'];\nexport { a };\n");
  expect(messages.filter((m) => /workflow runtime is private/.test(m)).length).toBeGreaterThanOrEqual(2);
});

it('passes public entries and our own relative paths', async () => {
  const fixture = [
    "import { OpenTelemetryInboundInterceptor } from '@temporalio/interceptors-opentelemetry';",
    "import Ajv2020 from 'ajv/dist/2020';",
    "import { routeOf } from '../tracing/install';",
    "import { lib } from './lib/helpers';",
    'export { OpenTelemetryInboundInterceptor, Ajv2020, routeOf, lib };',
  ].join('\n');
  expect(await lint('workflows/fixture.ts', fixture)).toEqual([]);
});
