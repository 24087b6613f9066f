/**
 * A tracing backend that refuses or stalls is seen, not silent: the process counts its spans
 * exported, failed and dropped (`trace_spans_total`) and writes one log line per kind of trouble a
 * minute, without the error's stack or the backend's answer. Real parts: the process's tracing as
 * installed (tracing/install.ts), OTLP/HTTP to a real HTTP server on 127.0.0.1.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { trace } from '@opentelemetry/api';
import { Registry } from 'prom-client';
import { countTraceSpans } from '../../metrics/trace-spans';
import type { TraceLogLine } from '../../tracing/health';
import { installTracing, type Tracing } from '../../tracing/install';
import { eventually } from '../helpers/stack';

let answer: (req: IncomingMessage, res: ServerResponse) => void;
let server: Server;
let tracing: Tracing;
const lines: TraceLogLine[] = [];
const registry = new Registry();

beforeAll(async () => {
  // A small batch queue, so a stalled backend fills it (the batch processor reads these at its construction); a timeout
  // long enough that the stalled export is answered, not timed out, however busy the machine.
  Object.assign(process.env, { OTEL_BSP_MAX_QUEUE_SIZE: '4', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '4', OTEL_EXPORTER_OTLP_TIMEOUT: '30000' });
  server = createServer((req, res) => req.resume().on('end', () => answer(req, res)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = url;
  tracing = installTracing('trace-health-test', (line) => lines.push(line))!;
  countTraceSpans(registry, tracing.spans);
});

afterAll(async () => {
  answer = (_req, res) => res.writeHead(200).end();
  await tracing?.shutdown();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const endSpans = (n: number) => {
  for (let i = 0; i < n; i++) trace.getTracer('test').startSpan(`span-${i}`).end();
};
const counted = async () => Object.fromEntries((await registry.getSingleMetric('trace_spans_total')!.get()).values.map((v) => [v.labels.outcome, v.value]));
/** The counts once `done` holds of them: exports end asynchronously, after the spans that start them. */
const countedWhen = (done: (c: Record<string, number>) => boolean) =>
  eventually('the span counts', async () => {
    const c = await counted();
    return done(c) ? c : undefined;
  }, 10_000);
// A full batch (4 spans) is exported at once, as in a busy worker, and a failure goes where a worker's does.

it('counts spans the backend took as exported', async () => {
  answer = (_req, res) => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
  endSpans(4);
  expect(await countedWhen((c) => c.exported! > 0)).toEqual({ exported: 4, failed: 0, dropped: 0 });
  expect(lines).toEqual([]);
});

it('counts spans the backend refused as failed, and says so once a minute without its answer', async () => {
  answer = (_req, res) => res.writeHead(400, { 'content-type': 'text/plain' }).end('secret-looking body');
  for (let batch = 1; batch <= 3; batch++) {
    endSpans(4);
    await countedWhen((c) => c.failed === 4 * batch);
  }
  expect(await counted()).toEqual({ exported: 4, failed: 12, dropped: 0 });
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatchObject({ level: 'ERROR', msg: expect.stringMatching(/^traces: /) });
  expect(lines[0]!.msg).not.toMatch(/secret-looking body|\n\s+at /);
});

it('counts spans dropped while the backend stalls and the queue is full', async () => {
  const stalled: ServerResponse[] = [];
  answer = (_req, res) => void stalled.push(res);
  endSpans(4); // a batch: its export stalls
  endSpans(10); // 4 fill the queue behind it, 6 find no room
  await eventually('the stalled export', () => stalled.length > 0 || undefined, 5_000);
  expect(stalled).toHaveLength(1);
  answer = (_req, res) => res.writeHead(200).end();
  stalled[0]!.writeHead(200).end();
  expect(await countedWhen((c) => c.exported === 12)).toMatchObject({ exported: 12, dropped: 6 }); // the stalled batch and the queued one; the rest dropped
});
