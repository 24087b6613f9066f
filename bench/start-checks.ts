/**
 * What the delivery workflow's start check costs (issue #18), and what the same check would cost
 * inside each workflow's sandbox:
 *
 * 1. `check`: the local activity's work in the worker's thread, where zod and the contract
 *    schemas are loaded once: CPU per check of a 5-destination start input.
 * 2. `payloads`: the local activity's data path: the input to a payload and through the
 *    AES-256-GCM codec and back (what the worker does for the activity's argument), per start.
 * 3. `sandbox`: the alternative, validating in workflow code. The SDK's reusable V8 context gives
 *    each workflow instance fresh module instances, so zod and the schemas would be evaluated per
 *    instance (and again on every replay from the start). Measured as esbuild's bundle of
 *    contract/schemas.ts evaluated in a fresh `vm` context, then one check: CPU and heap per
 *    instance.
 *
 * No server, nothing else needed; about 30 seconds.
 */
import { performance } from 'node:perf_hooks';
import vm from 'node:vm';
import { build } from 'esbuild';
import { defaultPayloadConverter } from '@temporalio/common';
import { deliveryInputIssues } from '../activities/start-checks';
import { AesGcmPayloadCodec, generatePayloadKey, payloadCodecFromEnv } from '../temporal/payload-codec';
import { deliveryRequest } from '../test/fixtures/orders';

const CHECKS = 5_000;
const ROUND_TRIPS = 5_000;
const INSTANCES = 40;

function input() {
  const { reference_number: _r, ...order } = deliveryRequest({ is_food: true }, 5);
  return { reference: 'BENCH-1', order, maxPrice: { amount: 1500, currency: 'EUR' } };
}

function cpuMs(fn: () => void): number {
  const before = process.cpuUsage();
  fn();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
}

async function cpuMsAsync(fn: () => Promise<void>): Promise<number> {
  const before = process.cpuUsage();
  await fn();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
}

export async function startChecksBenchmark(): Promise<Record<string, number | string>> {
  const start = input();
  const now = Date.now();

  // 1. The check in the worker's thread.
  for (let i = 0; i < 200; i++) deliveryInputIssues(start, now);
  const checkMs = cpuMs(() => {
    for (let i = 0; i < CHECKS; i++) if (deliveryInputIssues(start, now).length) throw new Error('the bench input must be valid');
  });
  console.log(`check in the worker's thread: ${((checkMs / CHECKS) * 1000).toFixed(1)} µs CPU each (${CHECKS})`);

  // 2. The local activity's argument: to a payload, encrypted, decrypted, back (the SDK does this once each way).
  const codec = payloadCodecFromEnv({ DELIVERY_PAYLOAD_KEYS: generatePayloadKey('bench') }) as AesGcmPayloadCodec;
  const roundTrip = async () => {
    const [enc] = await codec.encode([defaultPayloadConverter.toPayload(start)]);
    const [dec] = await codec.decode([enc!]);
    defaultPayloadConverter.fromPayload(dec!);
  };
  for (let i = 0; i < 200; i++) await roundTrip();
  const payloadMs = await cpuMsAsync(async () => {
    for (let i = 0; i < ROUND_TRIPS; i++) await roundTrip();
  });
  console.log(`argument round trip through the codec: ${((payloadMs / ROUND_TRIPS) * 1000).toFixed(1)} µs CPU each (${ROUND_TRIPS})`);

  // 3. The same schemas evaluated per workflow instance, as validation in workflow code would.
  const bundled = await build({ entryPoints: [require.resolve('../contract/schemas')], bundle: true, format: 'iife', globalName: 'contract', platform: 'neutral', mainFields: ['module', 'main'], write: false, logLevel: 'silent' });
  const script = new vm.Script(bundled.outputFiles[0]!.text + '\ncontract.DeliveryWorkflowInputSchema.safeParse(JSON.parse(globalThis.__input)).success');
  const json = JSON.stringify(start);
  const contexts: vm.Context[] = []; // kept alive, as cached workflows keep theirs
  const instance = () => {
    const ctx = vm.createContext({ __input: json });
    if (script.runInContext(ctx) !== true) throw new Error('the bench input must be valid in the sandbox too');
    contexts.push(ctx);
  };
  instance(); // compile once
  contexts.length = 0;
  (globalThis as { gc?: () => void }).gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  const wall = performance.now();
  const sandboxMs = cpuMs(() => {
    for (let i = 0; i < INSTANCES; i++) instance();
  });
  const wallMs = performance.now() - wall;
  (globalThis as { gc?: () => void }).gc?.();
  const heapPerInstanceMiB = (process.memoryUsage().heapUsed - heapBefore) / INSTANCES / 2 ** 20;
  console.log(`the same check in a fresh sandbox: ${(sandboxMs / INSTANCES).toFixed(1)} ms CPU, ${heapPerInstanceMiB.toFixed(2)} MiB heap per instance (${INSTANCES})`);

  return {
    check_in_worker_thread_cpu_us: Number(((checkMs / CHECKS) * 1000).toFixed(1)),
    argument_codec_round_trip_cpu_us: Number(((payloadMs / ROUND_TRIPS) * 1000).toFixed(1)),
    sandbox_per_instance_cpu_ms: Number((sandboxMs / INSTANCES).toFixed(1)),
    sandbox_per_instance_wall_ms: Number((wallMs / INSTANCES).toFixed(1)),
    sandbox_per_instance_heap_mib: Number(heapPerInstanceMiB.toFixed(2)),
    input: '5 destinations, maxPrice, encrypted payloads',
    gc_exposed: (globalThis as { gc?: () => void }).gc ? 'yes' : 'no (heap figure includes garbage; run with NODE_OPTIONS=--expose-gc)',
  };
}
