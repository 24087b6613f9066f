/**
 * docs/configuration.md lists every environment variable the code reads, and only those: a
 * setting added to the code without a row, or a row left behind when a setting goes, fails here.
 * "Read" is found in the non-test TypeScript sources: `process.env.X` and `env.X` (and their
 * `['X']` forms), the keys of the zod schemas given to parseEnv, and the benchmarks' settings
 * (`benchSettings('SCALE')` … `num('DELIVERIES', …)` is SCALE_BENCH_DELIVERIES).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');
const DOC = 'docs/configuration.md';

/** The system's own variables, read to find tools and the cache; the doc mentions them in prose. */
const SYSTEM = ['PATH', 'HOME', 'XDG_CACHE_HOME'];
/** Read by the Temporal SDK itself through @temporalio/envconfig, documented in one row without a read of ours. */
const READ_BY_THE_SDK = ['TEMPORAL_API_KEY', 'TEMPORAL_TLS', 'TEMPORAL_TLS_*', 'TEMPORAL_PROFILE', 'TEMPORAL_CONFIG_FILE', 'TEMPORAL_GRPC_META_*'];

function sources(): { path: string; text: string }[] {
  return execFileSync('git', ['ls-files', '*.ts'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((p) => p && !/^(test|node_modules|examples\/go-order-system)\//.test(p))
    .map((path) => ({ path, text: readFileSync(join(ROOT, path), 'utf8') }));
}

const NAME = '[A-Z][A-Z0-9_]*';
const READS = [
  new RegExp(`\\b(?:process\\.)?env\\.(${NAME})\\b(?!\\s*=[^=])`, 'g'),
  new RegExp(`\\b(?:process\\.)?env\\[['"\`](${NAME})['"\`]\\](?!\\s*=[^=])`, 'g'),
  /\b([A-Z]+_BENCH_[A-Z_]*[A-Z])\b/g,
];

/** The upper-case keys of each `z.object({ … })` in a file (its own level only): the env schemas given to parseEnv. */
function schemaKeys(text: string): string[] {
  const keys: string[] = [];
  for (const start of text.matchAll(/\bz\s*\.object\(\{/g)) {
    let depth = 0;
    let body = '';
    for (const ch of text.slice(start.index + start[0].length - 1)) {
      depth += ch === '{' || ch === '(' || ch === '[' ? 1 : ch === '}' || ch === ')' || ch === ']' ? -1 : 0;
      if (depth === 0) break;
      body += depth === 1 ? ch : ' ';
    }
    for (const m of body.matchAll(new RegExp(`(?:^|[{,\\s])(${NAME}):`, 'g'))) keys.push(m[1]!);
  }
  return keys;
}

/** Every variable the code reads, with the first file that reads it. */
function variablesRead(): Map<string, string> {
  const read = new Map<string, string>();
  const add = (name: string, path: string) => read.has(name) || read.set(name, path);
  for (const { path, text } of sources()) {
    for (const pattern of READS) for (const m of text.matchAll(pattern)) add(m[1]!, path);
    if (/\bparseEnv\(/.test(text)) for (const name of schemaKeys(text)) add(name, path);
    const prefix = /\bbenchSettings\('([A-Z]+)'[,)]/.exec(text)?.[1];
    if (prefix) for (const m of text.matchAll(/\bnum\(\s*'([A-Z_]+)'/g)) add(`${prefix}_BENCH_${m[1]}`, path);
  }
  return read;
}

/** The names in the first cell of each table row (`BRIDGE_HOST` / `BRIDGE_PORT` is two). */
function variablesDocumented(): Set<string> {
  const names = new Set<string>();
  for (const line of readFileSync(join(ROOT, DOC), 'utf8').split('\n')) {
    const cell = /^\|([^|]*)\|/.exec(line)?.[1];
    if (cell) for (const m of cell.matchAll(/`([A-Z][A-Z0-9_]*\*?)`/g)) names.add(m[1]!);
  }
  return names;
}

describe(DOC, () => {
  const read = variablesRead();
  const documented = variablesDocumented();

  it('finds the variables the code reads in each way it reads them', () => {
    // One of each kind, so a scan that silently stops matching fails here rather than passing empty.
    expect(read.get('TEMPORAL_CLI_PATH')).toBeDefined(); // process.env.X / env.X
    expect(read.get('BRIDGE_MAX_CONNECTIONS')).toBe('bridge/config.ts'); // a parseEnv schema key
    expect(read.get('SCALE_BENCH_HIT_SAMPLES')).toBe('bench/scale.ts'); // benchSettings('SCALE') … num('HIT_SAMPLES')
    expect(read.get('SIMULATOR_RATE_LIMIT_QUOTES')).toBe('simulator/config.ts');
  });

  it('documents every variable the code reads', () => {
    const missing = [...read].filter(([name]) => !documented.has(name) && !SYSTEM.includes(name)).map(([name, path]) => `${name} (read in ${path})`);
    expect(missing).toEqual([]);
  });

  it('documents only variables the code reads (or the SDK reads through envconfig)', () => {
    const stale = [...documented].filter((name) => !read.has(name) && !READ_BY_THE_SDK.includes(name));
    expect(stale).toEqual([]);
    expect(READ_BY_THE_SDK.filter((name) => !documented.has(name))).toEqual([]);
  });

  it('excepts only system variables the code really reads', () => {
    expect(SYSTEM.filter((name) => !read.has(name))).toEqual([]);
  });
});
