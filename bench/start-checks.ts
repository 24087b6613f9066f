/** npm run bench -- start-checks (issue #18): docs/benchmarks.md, "The workflow's start check". In workflow code each instance
 * would evaluate the schemas afresh (and on replay): esbuild's bundle of contract/schemas.ts in a fresh `vm` context, per instance. */
import vm from 'node:vm';
import { build } from 'esbuild';
import { defaultPayloadConverter } from '@temporalio/common';
import { deliveryInputIssues } from '../activities/start-checks';
import { generatePayloadKey, payloadCodecFromEnv } from '../temporal/payload-codec';
import { deliveryRequest } from '../test/fixtures/orders';

const CALLS = 5_000;
const INSTANCES = 40;

/** CPU milliseconds per call of `one` over `times` calls, after `warm` calls that settle the JIT. */
async function cpuMsPerCall(one: () => unknown, times: number, warm: number): Promise<number> {
  let before = process.cpuUsage();
  for (let i = 0; i < warm + times; i++) {
    if (i === warm) before = process.cpuUsage();
    const pending = one();
    if (pending instanceof Promise) await pending; // a synchronous check is timed without an await
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / times;
}

export async function startChecksBenchmark(): Promise<Record<string, number | string>> {
  const start = { reference: 'BENCH-1', order: deliveryRequest({ is_food: true }, 5), maxPrice: { amount: 1500, currency: 'EUR' } };
  const now = Date.now();
  // A valid input, and a heap figure without garbage in it: the figures are of the path a real start takes.
  if (deliveryInputIssues(start, now).length > 0) throw new Error('the bench input must be a valid start input');
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with NODE_OPTIONS=--expose-gc: the heap figure needs a collection before and after');
  const checkMs = await cpuMsPerCall(() => deliveryInputIssues(start, now), CALLS, 200);
  const codec = payloadCodecFromEnv({ DELIVERY_PAYLOAD_KEYS: generatePayloadKey('bench') })!;
  const roundTripMs = await cpuMsPerCall(async () => {
    const [encoded] = await codec.encode([defaultPayloadConverter.toPayload(start)]);
    defaultPayloadConverter.fromPayload((await codec.decode([encoded!]))[0]!);
  }, CALLS, 200);
  const bundled = await build({ entryPoints: [require.resolve('../contract/schemas')], bundle: true, format: 'iife', globalName: 'contract', platform: 'neutral', mainFields: ['module', 'main'], write: false, logLevel: 'silent' });
  const script = new vm.Script(bundled.outputFiles[0]!.text + '\ncontract.DeliveryWorkflowInputSchema.safeParse(JSON.parse(globalThis.__input)).success');
  const json = JSON.stringify(start);
  const contexts: vm.Context[] = []; // kept alive, as cached workflows keep theirs
  const instance = () => {
    const context = vm.createContext({ __input: json });
    if (script.runInContext(context) !== true) throw new Error('the bench input must be a valid start input');
    contexts.push(context);
  };
  instance(); // compiles the script
  gc();
  const heapBefore = process.memoryUsage().heapUsed;
  const sandboxMs = await cpuMsPerCall(instance, INSTANCES, 0);
  gc();
  return {
    check_in_worker_thread_cpu_us: Number((checkMs * 1000).toFixed(1)),
    argument_codec_round_trip_cpu_us: Number((roundTripMs * 1000).toFixed(1)),
    sandbox_per_instance_cpu_ms: Number(sandboxMs.toFixed(1)),
    sandbox_per_instance_heap_mib: Number(((process.memoryUsage().heapUsed - heapBefore) / INSTANCES / 2 ** 20).toFixed(2)),
  };
}
