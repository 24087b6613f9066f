/**
 * A strict reader of the Prometheus text exposition format (0.0.4), enough to check that
 * /metrics parses and to read its samples: every line must be a HELP, TYPE, comment or sample
 * line, every sample must belong to a declared family, and histograms must be consistent.
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  types: Map<string, string>;
  samples: Sample[];
  /** The value of the one sample with this name and exactly these labels (0 when absent). */
  value(name: string, labels?: Record<string, string>): number;
  /** Sum over every sample with this name whose labels include these. */
  sum(name: string, labels?: Record<string, string>): number;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"\s*(,|$)/y;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

export function parsePrometheusText(text: string): Exposition {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  const lines = text.split('\n');
  if (lines.at(-1) !== '') throw new Error('the exposition must end with a newline');
  lines.forEach((line, i) => {
    const where = `line ${i + 1} (${JSON.stringify(line.slice(0, 80))})`;
    if (line === '') return;
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (!m) return; // a plain comment
      if (!NAME.test(m[2]!)) throw new Error(`${where}: bad metric name`);
      if (m[1] === 'TYPE') {
        if (!TYPES.has(m[3]!)) throw new Error(`${where}: unknown type`);
        if (types.has(m[2]!)) throw new Error(`${where}: TYPE given twice`);
        types.set(m[2]!, m[3]!);
      }
      return;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: (-?\d+))?$/.exec(line);
    if (!m) throw new Error(`${where}: not a sample line`);
    const value = parseValue(m[3]!);
    if (value === undefined) throw new Error(`${where}: bad value`);
    const name = m[1]!;
    const family = [name, name.replace(/_(bucket|sum|count|total|created)$/, '')].find((n) => types.has(n));
    if (!family) throw new Error(`${where}: sample before its TYPE line`);
    samples.push({ name, labels: parseLabels(m[2] ?? '', where), value });
  });
  checkHistograms(types, samples);
  const matches = (s: Sample, name: string, labels: Record<string, string>) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v);
  return {
    types,
    samples,
    value(name, labels = {}) {
      const found = samples.filter((s) => matches(s, name, labels) && Object.keys(s.labels).length === Object.keys(labels).length);
      if (found.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${found.length} samples`);
      return found[0]?.value ?? 0;
    },
    sum(name, labels = {}) {
      return samples.filter((s) => matches(s, name, labels)).reduce((a, s) => a + s.value, 0);
    },
  };
}

function parseValue(s: string): number | undefined {
  if (s === '+Inf') return Infinity;
  if (s === '-Inf') return -Infinity;
  if (s === 'NaN') return NaN;
  const n = Number(s);
  return /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s) && Number.isFinite(n) ? n : undefined;
}

function parseLabels(body: string, where: string): Record<string, string> {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < body.length) {
    const m = LABEL.exec(body);
    if (!m) throw new Error(`${where}: bad labels`);
    if (m[1]! in labels) throw new Error(`${where}: label ${m[1]} given twice`);
    labels[m[1]!] = m[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    if (m[3] === '' && LABEL.lastIndex < body.length) throw new Error(`${where}: bad labels`);
  }
  return labels;
}

function labelKey(labels: Record<string, string>): string {
  return JSON.stringify(Object.entries(labels).sort(([a], [b]) => a.localeCompare(b)));
}

/** Buckets cumulative and ending in +Inf, whose count equals _count, for every label set. */
function checkHistograms(types: Map<string, string>, samples: Sample[]): void {
  for (const [family, type] of types) {
    if (type !== 'histogram') continue;
    const series = new Map<string, { le: number; value: number }[]>();
    for (const s of samples.filter((x) => x.name === `${family}_bucket`)) {
      const { le, ...rest } = s.labels;
      if (le === undefined) throw new Error(`${family}_bucket without le`);
      const key = labelKey(rest);
      series.set(key, [...(series.get(key) ?? []), { le: parseValue(le)!, value: s.value }]);
    }
    for (const [key, buckets] of series) {
      buckets.sort((a, b) => a.le - b.le);
      buckets.forEach((b, i) => {
        if (i > 0 && b.value < buckets[i - 1]!.value) throw new Error(`${family}${key}: buckets not cumulative`);
      });
      const last = buckets.at(-1)!;
      const count = samples.find((s) => s.name === `${family}_count` && labelKey(s.labels) === key);
      if (last.le !== Infinity || !count || count.value !== last.value) throw new Error(`${family}${key}: +Inf bucket and _count disagree`);
    }
  }
}
