/** tracing/health.ts's diagnostics: one line per kind of trouble a minute, then how many were left out; an error without its stack. */
import { traceDiagnostics, type TraceLogLine } from '../../tracing/health';

it('writes a kind of trouble once a minute, then says how many lines it left out', () => {
  let t = 0;
  const lines: TraceLogLine[] = [];
  const d = traceDiagnostics((l) => lines.push(l), () => t);
  const refused = Object.assign(new Error('Bad Request'), { name: 'OTLPExporterError', code: 400, data: 'the backend said: key abc123' });
  d.onError(refused);
  t = 30_000;
  d.onError(refused);
  d.onError(Object.assign(new Error('Bad Request'), { name: 'OTLPExporterError', code: 401 })); // numbers blanked: the same kind
  d.logger.warn('Dropped 3 spans because maxQueueSize reached'); // another kind: written
  t = 61_000;
  d.onError(refused);
  d.logger.warn('Dropped 5 spans because maxQueueSize reached'); // within its minute: left out
  expect(lines).toEqual([
    { level: 'ERROR', msg: 'traces: OTLPExporterError: Bad Request (code 400)' },
    { level: 'WARN', msg: 'traces: Dropped 3 spans because maxQueueSize reached' },
    { level: 'ERROR', msg: 'traces: OTLPExporterError: Bad Request (code 400)', repeated: 2 },
  ]);
});

it('ignores what OpenTelemetry says below a warning', () => {
  const lines: TraceLogLine[] = [];
  const d = traceDiagnostics((l) => lines.push(l));
  d.logger.info('exporting');
  d.logger.debug('maxQueueSize reached, dropping spans');
  expect(lines).toEqual([]);
});
