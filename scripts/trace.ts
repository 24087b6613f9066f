/**
 * `npm run trace -- <trace id>`: one trace as a person reads it, from a Jaeger's query API
 * (JAEGER_QUERY_URL, default the `npm start -- --observe` one). The Jaeger built here from its Go
 * module serves no UI (its binary embeds only a placeholder page), so this prints the trace as a
 * waterfall: each span indented under its parent, when it started after the trace's first span,
 * how long it took, its process; a span whose parent is not in the trace starts a root of its own.
 */
import { z } from 'zod';
import { JAEGER_PORTS } from './observe';

const JaegerTraceSchema = z.object({
  data: z.array(
    z.object({
      traceID: z.string(),
      spans: z.array(
        z.object({
          spanID: z.string(),
          operationName: z.string(),
          references: z.array(z.object({ refType: z.string(), spanID: z.string() })).default([]),
          /** Microseconds since the epoch, as Jaeger's API gives them. */
          startTime: z.number(),
          duration: z.number(),
          processID: z.string(),
        }),
      ),
      processes: z.record(z.string(), z.object({ serviceName: z.string() })),
    }),
  ),
});
export type JaegerTrace = z.infer<typeof JaegerTraceSchema>['data'][number];

const seconds = (us: number) => `${(us / 1e6).toFixed(3)} s`;

/** The waterfall of one trace, one line per span. */
export function renderTrace(t: JaegerTrace): string {
  const ids = new Set(t.spans.map((s) => s.spanID));
  const parentOf = (s: JaegerTrace['spans'][number]) => s.references.find((r) => r.refType === 'CHILD_OF' && ids.has(r.spanID))?.spanID;
  const byStart = [...t.spans].sort((a, b) => a.startTime - b.startTime);
  const children = new Map<string | undefined, typeof byStart>();
  for (const s of byStart) children.set(parentOf(s), [...(children.get(parentOf(s)) ?? []), s]);
  const t0 = byStart[0]?.startTime ?? 0;
  const end = Math.max(...t.spans.map((s) => s.startTime + s.duration));
  const services = new Set(Object.values(t.processes).map((p) => p.serviceName));
  const rows: string[][] = [];
  const walk = (parent: string | undefined, depth: number) => {
    for (const s of children.get(parent) ?? []) {
      rows.push([seconds(s.startTime - t0), seconds(s.duration), `${'  '.repeat(depth)}${depth ? '└ ' : ''}${s.operationName}`, t.processes[s.processID]?.serviceName ?? s.processID]);
      walk(s.spanID, depth + 1);
    }
  };
  walk(undefined, 0);
  const widths = [0, 1, 2, 3].map((i) => Math.max(...[['AT', 'TOOK', 'SPAN', 'PROCESS'][i]!, ...rows.map((r) => r[i]!)].map((c) => c.length)));
  const line = (r: string[]) => r.map((c, i) => (i < 2 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd();
  return [`trace ${t.traceID}: ${t.spans.length} spans, ${services.size} processes, ${seconds(end - t0)}`, line(['AT', 'TOOK', 'SPAN', 'PROCESS']), ...rows.map(line)].join('\n');
}

async function main(traceId: string | undefined): Promise<void> {
  if (!traceId || !/^[0-9a-f]{32}$/.test(traceId)) throw new Error('usage: npm run trace -- <trace id> (32 hex digits: `delivery status <reference>` prints it)');
  const base = process.env.JAEGER_QUERY_URL ?? `http://127.0.0.1:${JAEGER_PORTS.query}`;
  const res = await fetch(`${base}/api/traces/${traceId}`).catch((err: Error) => {
    throw new Error(`no Jaeger at ${base} (${err.message}): npm start -- --observe runs one, JAEGER_QUERY_URL names another`);
  });
  if (res.status === 404) throw new Error(`Jaeger at ${base} has no trace ${traceId} (yet: spans arrive in batches within seconds; an in-memory Jaeger forgets them when it stops)`);
  if (!res.ok) throw new Error(`Jaeger at ${base} answered ${res.status}`);
  const trace = JaegerTraceSchema.parse(await res.json()).data[0];
  if (!trace) throw new Error(`Jaeger at ${base} has no trace ${traceId}`);
  console.log(renderTrace(trace));
}

if (require.main === module) {
  main(process.argv[2]).catch((err: Error) => {
    console.error(`trace: ${err.message}`);
    process.exit(1);
  });
}
