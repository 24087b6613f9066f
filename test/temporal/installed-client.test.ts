/**
 * Issue #27: an order system in its own repository installs the client package and uses it. The
 * package is packed (`npm pack`, which builds it), installed from the tarball into an empty
 * directory outside this repository, and used from there the way an order system would: a
 * CommonJS program run by plain `node` (no tsx anywhere in that tree), a TypeScript file
 * typechecked against the shipped declarations, and `npx delivery`. Against the real stack, with
 * payload encryption on as `npm start` sets it up.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import type { DeliveryState } from '../../contract/delivery-types';
import { dataConverterFromEnv, generatePayloadKey, payloadCodecFromEnv } from '../../temporal/payload-codec';
import { deliveryRequest } from '../fixtures/orders';
import { DeliveryNotFoundError } from '../../client/delivery-client';
import { createdDelivery, driveToDelivered, eventually, startStack, type Stack } from '../helpers/stack';

const run = promisify(execFile);
const REPO = join(__dirname, '../..');
const PACKAGE_DIR = join(REPO, 'packages/client');
const TSC = join(REPO, 'node_modules/.bin/tsc');
const keys = generatePayloadKey('pkg1');

let stack: Stack;
/** The order system's directory: an empty project that installed the tarball. */
let app: string;
let packs: string;
let env: NodeJS.ProcessEnv;
let seq = 0;

/** What an order system writes: start a delivery and follow it, or start one and cancel it. */
const PROGRAM = `'use strict';
const { readFileSync } = require('node:fs');
const { DeliveryClient } = require('@delivery-orchestrator/client');

async function main([command, reference, orderFile]) {
  const client = await DeliveryClient.connect();
  try {
    const order = JSON.parse(readFileSync(orderFile, 'utf8'));
    console.log(JSON.stringify({ started: await client.startDelivery(order, { reference }) }));
    let last;
    for await (const { state, changes } of client.watch(reference, { intervalMs: 200 })) {
      last = state;
      for (const change of changes) console.log(JSON.stringify({ change }));
      if (command === 'cancel' && state.phase === 'following') {
        console.log(JSON.stringify({ cancelled: await client.cancelDelivery(reference) }));
        return;
      }
    }
    // The watch ends with the delivery (the workflow itself may stay open a while for late statuses).
    console.log(JSON.stringify({ final: last }));
  } finally {
    await client.close();
  }
}
main(process.argv.slice(2)).catch((err) => {
  console.error(err);
  process.exit(1);
});
`;

/** The same use, typed: compiles only if the declarations carry the real types. */
const TYPED = `import { DeliveryClient, InvalidInputError, type DeliveryOrder, type DeliveryResult, type DeliveryState, type StartOptions } from '@delivery-orchestrator/client';

export async function deliver(client: DeliveryClient, order: DeliveryOrder, reference: string, maxPrice?: StartOptions['maxPrice']): Promise<DeliveryResult> {
  const started = await client.startDelivery(order, { reference, maxPrice });
  const already: boolean = started.alreadyStarted;
  void already;
  for await (const update of client.watch(reference)) {
    const status: DeliveryState['status'] = update.state.status;
    void status;
  }
  return client.result(reference);
}

export async function cancel(client: DeliveryClient, reference: string): Promise<string | undefined> {
  const state = await client.cancelDelivery(reference, { wait: true });
  return state.cancellation?.outcome;
}

export function fieldOf(err: unknown): string | undefined {
  return err instanceof InvalidInputError ? err.issues[0]?.field : undefined;
}

export async function misuse(client: DeliveryClient, order: DeliveryOrder): Promise<void> {
  // @ts-expect-error the reference is required
  await client.startDelivery(order, {});
  // @ts-expect-error a price is an amount in minor units and a currency
  await client.startDelivery(order, { reference: 'R-1', maxPrice: 12 });
  // @ts-expect-error no such method
  await client.startDeliveries([order]);
}
`;

function order(destinations = 1) {
  const { reference_number: _r, ...o } = deliveryRequest({ is_food: false }, destinations);
  return o;
}

function orderFile(destinations = 1): string {
  const file = join(app, `order-${++seq}.json`);
  writeFileSync(file, JSON.stringify(order(destinations)));
  return file;
}

const newReference = () => `PKG-${Date.now().toString(36)}-${++seq}`;
type Line = { started?: { alreadyStarted: boolean }; change?: { status?: string }; final?: DeliveryState; cancelled?: DeliveryState };
const lines = (stdout: string): Line[] =>
  stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Line);

/** Runs `node order-system.js ...` in the order system's directory; resolves with its output. */
function program(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['order-system.js', ...args], { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill(), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

beforeAll(async () => {
  const codec = payloadCodecFromEnv({ DELIVERY_PAYLOAD_KEYS: keys })!;
  const [built] = await Promise.all([
    (async () => {
      // Once per file: pack (prepack builds dist/), then install the tarball as an order system would.
      packs = mkdtempSync(join(tmpdir(), 'client-pack-'));
      const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', packs], { cwd: PACKAGE_DIR, timeout: 120_000 });
      const tarball = join(packs, (JSON.parse(stdout) as { filename: string }[])[0]!.filename);
      const dir = mkdtempSync(join(tmpdir(), 'order-system-'));
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'order-system', version: '1.0.0', private: true }));
      const typesNode = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies['@types/node'];
      await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball, `@types/node@${typesNode}`], { cwd: dir, timeout: 180_000 });
      writeFileSync(join(dir, 'order-system.js'), PROGRAM);
      writeFileSync(join(dir, 'deliveries.ts'), TYPED);
      writeFileSync(
        join(dir, 'tsconfig.json'),
        JSON.stringify({ compilerOptions: { strict: true, target: 'ES2022', module: 'node16', moduleResolution: 'node16', types: ['node'], skipLibCheck: true, noEmit: true }, files: ['deliveries.ts'] }),
      );
      return dir;
    })(),
    (async () => {
      const dataConverter = dataConverterFromEnv({ DELIVERY_PAYLOAD_KEYS: keys });
      stack = await startStack({ dataConverter: { ...dataConverter, payloadCodecs: [codec] } });
    })(),
  ]);
  app = built;
  env = { ...stack.cliEnv, DELIVERY_PAYLOAD_KEYS: keys };
  // Plain node: nothing may load tsx or another transpiler through the environment.
  delete env.NODE_OPTIONS;
}, 300_000);
afterAll(async () => {
  await stack?.stop();
  for (const d of [app, packs]) if (d) rmSync(d, { recursive: true, force: true });
});

describe('the client package installed by an order system', () => {
  it('is outside this repository and brings the client and its runtime dependencies, not the worker, tsx or test tools', () => {
    expect(relative(REPO, app).startsWith('..')).toBe(true);
    const pkg = join(app, 'node_modules/@delivery-orchestrator/client');
    expect(existsSync(join(pkg, 'dist/client/index.js'))).toBe(true);
    expect(existsSync(join(pkg, 'dist/client/index.d.ts'))).toBe(true);
    // Only what the client's imports reach: no worker, workflow bundle, bridge or simulator code.
    expect(readdirSync(join(pkg, 'dist')).sort()).toEqual(['client', 'contract', 'provider', 'temporal', 'tracing', 'workflows']);
    expect(readdirSync(join(pkg, 'dist/workflows')).filter((f) => f.endsWith('.js')).sort()).toEqual(['details.js', 'quote-fingerprint.js', 'start-options.js']);
    for (const absent of ['tsx', 'esbuild', '@temporalio/worker', '@temporalio/core-bridge', '@temporalio/testing', 'jest', 'typescript', 'prom-client']) {
      expect([absent, existsSync(join(app, 'node_modules', absent))]).toEqual([absent, false]);
    }
  });

  it('loads from an ES module as well', async () => {
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', "import { DeliveryClient, InvalidInputError } from '@delivery-orchestrator/client'; console.log(typeof DeliveryClient.connect, typeof InvalidInputError);"], { cwd: app, env });
    expect(stdout.trim()).toBe('function function');
  });

  it('typechecks a TypeScript order system against the shipped declarations (and refuses misuse)', async () => {
    const r = await run(TSC, ['-p', join(app, 'tsconfig.json')], { cwd: app, timeout: 60_000 }).then(
      () => ({ code: 0, out: '' }),
      (e: { code: number; stdout: string }) => ({ code: e.code, out: e.stdout }),
    );
    // Each @ts-expect-error above must meet an error: declarations typed `any` would fail here.
    expect(r).toEqual({ code: 0, out: '' });
  });

  it('starts a delivery with plain node and follows it to DELIVERED', async () => {
    const reference = newReference();
    const running = program(['deliver', reference, orderFile(2)]);
    // Started by the program, in its own time: wait for it to exist, then to be created.
    await eventually('the program to start the delivery', () => stack.deliveries.getStatus(reference).catch((e: unknown) => (e instanceof DeliveryNotFoundError ? undefined : Promise.reject(e))));
    const s = await createdDelivery(stack, reference);
    driveToDelivered(stack.sim, s.deliveryId!);
    const { code, stdout, stderr } = await running;
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    const out = lines(stdout);
    expect(out[0]!.started).toMatchObject({ reference, alreadyStarted: false });
    expect(out.filter((l) => l.change?.status === 'DELIVERED').length).toBeGreaterThanOrEqual(3); // the delivery and both stops
    const final = out.at(-1)!.final!;
    expect(final.status).toBe('DELIVERED');
    expect(final.destinations.map((d) => d.status)).toEqual(['DELIVERED', 'DELIVERED']);
  });

  it('cancels another with plain node: cancelled at the provider', async () => {
    const reference = newReference();
    const { code, stdout, stderr } = await program(['cancel', reference, orderFile()]);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    const cancelled = lines(stdout).at(-1)!.cancelled!;
    expect(cancelled.cancellation?.outcome).toBe('cancelled');
    expect(cancelled.status).toBe('CANCELED');
    const atProvider = stack.sim.deliveries().filter((d) => d.delivery.reference_number === reference);
    expect(atProvider.map((d) => d.delivery.status)).toEqual(['CANCELED']);
  });

  it('runs `npx delivery` from the order system: help, and a delivery by reference', async () => {
    const help = await run('npx', ['--no-install', 'delivery', '--help'], { cwd: app, env, timeout: 30_000 });
    expect(help.stdout).toMatch(/^delivery: start, follow and change deliveries/);
    expect(help.stdout).toContain('Exit codes:');

    const reference = newReference();
    const created = await run('npx', ['--no-install', 'delivery', 'create', '--reference', reference, '--order', orderFile(), '--json', '--check-timeout', '60'], { cwd: app, env, timeout: 30_000 });
    expect(JSON.parse(created.stdout)).toMatchObject({ reference, alreadyStarted: false });
    await createdDelivery(stack, reference);
    const status = await run('npx', ['--no-install', 'delivery', 'status', reference, '--json'], { cwd: app, env, timeout: 30_000 });
    expect(JSON.parse(status.stdout)).toMatchObject({ reference, phase: 'following' });
  });
});
