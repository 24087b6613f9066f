/**
 * `npm run trace`'s waterfall (scripts/trace.ts): spans under their parents in start order, times
 * from the trace's first span, a span whose parent is missing as a root of its own.
 */
import { renderTrace, type JaegerTrace } from '../../scripts/trace';

const span = (spanID: string, operationName: string, startTime: number, duration: number, processID: string, parent?: string) => ({
  spanID,
  operationName,
  startTime,
  duration,
  processID,
  references: parent ? [{ refType: 'CHILD_OF', spanID: parent }] : [],
});

it('draws each span under its parent, in start order, with its offset, duration and process', () => {
  const trace: JaegerTrace = {
    traceID: 'a'.repeat(32),
    processes: { p1: { serviceName: 'delivery-cli' }, p2: { serviceName: 'delivery-worker' }, p3: { serviceName: 'delivery-bridge' } },
    spans: [
      span('3', 'RunActivity:createDelivery', 1_500_000, 250_000, 'p2', '2'),
      span('1', 'StartWorkflow:delivery', 1_000_000, 20_000, 'p1'),
      span('2', 'RunWorkflow:delivery', 1_010_000, 4_000_000, 'p2', '1'),
      span('4', 'HandleSignal:statusChanged', 3_000_000, 1_000, 'p2', 'gone'),
    ],
  };
  expect(renderTrace(trace).split('\n')).toEqual([
    `trace ${'a'.repeat(32)}: 4 spans, 3 processes, 4.010 s`,
    '     AT     TOOK  SPAN                              PROCESS',
    '0.000 s  0.020 s  StartWorkflow:delivery            delivery-cli',
    '0.010 s  4.000 s    └ RunWorkflow:delivery          delivery-worker',
    '0.500 s  0.250 s      └ RunActivity:createDelivery  delivery-worker',
    '2.000 s  0.001 s  HandleSignal:statusChanged        delivery-worker',
  ]);
});
