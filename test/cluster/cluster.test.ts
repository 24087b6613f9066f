/**
 * The production-shaped stack (`npm run cluster`'s provisioning, on free ports): Temporal v1.32.1
 * as frontend, 2 history, 2 matching and worker service processes on PostgreSQL, 3 delivery
 * worker processes, 2 bridge processes behind nginx that the simulator's webhooks go through.
 * The simulator runs 60× faster (the provider's minute is one second) and enforces its strict
 * rolling windows; the workers are told the same scaled limits.
 *
 * Every process runs under the stack's own supervisor, as in `npm run cluster`: the fault runs
 * kill a process and leave it to the stack, then check that it came back, that a delivery started
 * at the kill ends DELIVERED, and that nothing was lost or duplicated. They use a 30-order backlog
 * each (not 100): six of them with 100 orders would add minutes of quote windows to CI; each still
 * has orders waiting, being created and being followed through webhooks when the fault hits.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { deliveryRank } from '../../provider/lifecycle';
import type { DeliveryStatus } from '../../provider/schemas';
import type { RequestLogEntry } from '../../simulator/context';
import type { DeliveryOrder, DeliveryState } from '../../contract/delivery-types';
import { deliveryRequest, destination } from '../fixtures/orders';
import { ClusterStack } from '../helpers/cluster';
import { eventually } from '../helpers/stack';
import { accepts } from '../../scripts/temporal-dev-server';
import { TEMPORAL_SERVER_VERSION } from '../../scripts/cluster/tools';

const run = promisify(execFile);
const CLI = join(__dirname, '../../client/delivery.js');
const SCALE = 60;
const LIMITS = { creations: { limit: 20, windowMs: 1_000 }, quotes: { limit: 100, windowMs: 10_000 }, other: { limit: 600, windowMs: 1_000 } };
const FAULT_BACKLOG = 30;

let stack: ClusterStack;
/** Everything the stack printed while it started. */
let startOutput = '';
const stamp = Date.now().toString(36);

beforeAll(async () => {
  stack = await ClusterStack.start({
    workers: 3,
    ui: true,
    simulatorEnv: { SIMULATOR_TIME_SCALE: String(SCALE), SIMULATOR_AUTO_ADVANCE_MS: '20000' },
    workerEnv: {
      PROVIDER_RATE_LIMITS: Object.entries(LIMITS)
        .map(([f, l]) => `${f}=${l.limit}/${l.windowMs}ms`)
        .join(','),
      PROVIDER_PACING_MARGIN_MS: '20',
      PROVIDER_QUOTE_MIN_REMAINING_MS: '1000',
    },
  });
  startOutput = stack.group.output;
}, 600_000);

afterAll(async () => {
  if (process.env.CLUSTER_TEST_OUTPUT) console.log(stack?.group.tail(20_000));
  await stack?.stop();
}, 120_000);

function order(n: number, food = false): DeliveryOrder {
  const { reference_number: _r, ...o } = deliveryRequest({ is_food: food, destinations: [destination(0, { location: { last_name: 'C', company: '', phone: '+4915112345600', address: `Clusterweg ${stamp}-${n}, 10115 Berlin` } })] });
  return o;
}

function familyOf(e: RequestLogEntry): keyof typeof LIMITS | undefined {
  if (!e.path.startsWith('/v1/')) return undefined;
  if (e.method === 'POST' && e.path === '/v1/deliveries') return 'creations';
  if (e.method === 'POST' && e.path === '/v1/quotes') return 'quotes';
  return 'other';
}

/** The most accepted calls of each family inside any rolling window, from the simulator's request log. */
function busiestWindows(log: RequestLogEntry[]): Record<keyof typeof LIMITS, number> {
  const out = { creations: 0, quotes: 0, other: 0 };
  for (const family of Object.keys(LIMITS) as (keyof typeof LIMITS)[]) {
    const times = log
      .filter((e) => familyOf(e) === family && e.status !== 429)
      .map((e) => Date.parse(e.time))
      .sort((a, b) => a - b);
    for (let i = 0, j = 0; j < times.length; j++) {
      while (times[j]! - times[i]! >= LIMITS[family].windowMs) i++;
      out[family] = Math.max(out[family], j - i + 1);
    }
  }
  return out;
}

/** Checks the provider against the workflows: one delivery per reference, no orphans, the same final state. */
async function providerAgrees(references: string[], results: Map<string, DeliveryState>) {
  const all = await stack.sim.deliveries();
  const prefix = references[0]!.replace(/-\d+$/, '-');
  const mine = all.filter((d) => d.delivery.reference_number?.startsWith(prefix));
  const count = new Map<string, number>();
  for (const d of mine) count.set(d.delivery.reference_number!, (count.get(d.delivery.reference_number!) ?? 0) + 1);
  const duplicated = references.filter((r) => (count.get(r) ?? 0) > 1);
  const orphans = mine.filter((d) => !references.includes(d.delivery.reference_number!)).map((d) => d.delivery.id);
  const missing = references.filter((r) => !count.has(r));
  const disagreeing = references.flatMap((r) => {
    const truth = mine.find((d) => d.delivery.reference_number === r)?.delivery;
    const got = results.get(r);
    return truth && got && (got.deliveryId !== truth.id || got.status !== truth.status) ? [{ r, workflow: `${got.deliveryId} ${got.status}`, provider: `${truth.id} ${truth.status}` }] : [];
  });
  return { duplicated, orphans, missing, disagreeing };
}

async function resultsOf(references: string[]): Promise<Map<string, DeliveryState>> {
  const entries = await Promise.all(references.map(async (r) => [r, await stack.client.result(r)] as const));
  return new Map(entries);
}

/** Webhook events that will never reach a bridge (failed for good or dropped). */
async function lostWebhooks(since: number): Promise<string[]> {
  const { events } = await stack.sim.webhooks();
  return events.filter((e) => Date.parse(e.created_at) >= since && (e.state === 'failed' || e.state === 'dropped')).map((e) => `${e.event_id} ${e.status} ${e.state}`);
}

test('a healthy start prints no error line and no stack trace, so that an error line always means something', () => {
  // Temporal logs JSON lines at warn and above (deploy/temporal-cluster.yaml). Of PostgreSQL's, `npm run cluster` shows only
  // FATAL and PANIC: its ERROR lines are statements Temporal expects to fail (a namespace inserted twice) and retries.
  const bad = startOutput.split('\n').filter((l) => (l.startsWith('[postgresql] ') ? /\b(FATAL|PANIC):/.test(l) : /"level":"(error|dpanic|panic|fatal)"|"stacktrace"|^\[stack\]/.test(l)));
  expect(bad).toEqual([]);
});

test('the cluster runs on PostgreSQL with 4 shards, two history and two matching processes in the ring', async () => {
  const { stdout } = await run(stack.cluster.o.cli, ['operator', 'cluster', 'describe', '--address', stack.cluster.address, '--output', 'json'], { encoding: 'utf8' });
  const d = JSON.parse(stdout) as { persistenceStore: string; visibilityStore: string; historyShardCount: number; serverVersion: string };
  expect({ persistenceStore: d.persistenceStore, visibilityStore: d.visibilityStore, historyShardCount: d.historyShardCount, serverVersion: d.serverVersion }).toEqual({
    persistenceStore: 'postgres12',
    visibilityStore: 'postgres12',
    historyShardCount: 4,
    serverVersion: TEMPORAL_SERVER_VERSION.slice(1),
  });
  // Ring membership as the services record it (roles: 1 frontend, 2 history, 3 matching, 4 worker), live entries only.
  const members = stack.cluster.postgres.query('temporal', "SELECT role, count(DISTINCT rpc_port) FROM cluster_membership WHERE record_expiry > now() GROUP BY role ORDER BY role");
  expect(members).toEqual({ ok: true, out: '1|1\n2|2\n3|2\n4|1' });
});

test('a delivery created with the CLI ends DELIVERED through webhooks that pass the load balancer', async () => {
  const reference = `CLI-${stamp}`;
  const created = await run(process.execPath, [CLI, 'create', '--reference', reference, '--order', join(__dirname, '../../docs/examples/order.json'), '--json', '--check-timeout', '60'], { env: stack.cliEnv, encoding: 'utf8' });
  expect(created.stdout).toContain(reference);
  const final = await eventually(
    `${reference} to be DELIVERED`,
    async () => {
      const { stdout } = await run(process.execPath, [CLI, 'status', reference, '--json'], { env: stack.cliEnv, encoding: 'utf8' });
      const s = JSON.parse(stdout) as DeliveryState;
      return s.status === 'DELIVERED' && s.phase === 'ended' ? s : undefined;
    },
    120_000,
  );
  // The simulator sent this delivery's webhooks to nginx's address, and they were acknowledged there.
  const { attempts } = await stack.sim.webhooks();
  const ours = attempts.filter((a) => a.url.startsWith(stack.lb.url) && a.answer_status !== null && a.answer_status < 300);
  expect(ours.length).toBeGreaterThan(0);
  const deliveredWebhook = (await stack.sim.webhooks()).events.find((e) => e.delivery_id === final.deliveryId && e.status === 'DELIVERED');
  expect(deliveredWebhook?.state).toBe('delivered');
});

test('100 orders at once across 3 worker processes: never over a rolling window, no 429, one delivery each', async () => {
  const since = new Date().toISOString();
  const references = Array.from({ length: 100 }, (_, i) => `BULK-${stamp}-${i}`);
  const started = Date.now();
  await Promise.all(references.map((reference, i) => stack.client.startDelivery(order(i, i % 4 === 0), { reference })));
  const results = await resultsOf(references);
  console.log(`100 orders on the cluster: every workflow ended ${((Date.now() - started) / 1000).toFixed(1)} s after the first start`);
  const log = (await stack.sim.requests()).filter((e) => e.time >= since);
  expect(log.filter((e) => e.status === 429)).toEqual([]);
  const busiest = busiestWindows(log);
  for (const family of Object.keys(LIMITS) as (keyof typeof LIMITS)[]) expect({ family, most: busiest[family] <= LIMITS[family].limit }).toEqual({ family, most: true });
  expect(busiest.creations).toBeGreaterThan(1);
  expect(await providerAgrees(references, results)).toEqual({ duplicated: [], orphans: [], missing: [], disagreeing: [] });
}, 300_000);

/**
 * One process of each kind is SIGKILLed in turn and left to the stack: `npm run cluster`'s
 * supervisor (scripts/supervisor.ts, here through the same SupervisedStack) starts it again
 * while the rest keep serving. The test never restarts anything itself.
 */
const KILLS = ['matching-1', 'history-2', 'frontend', 'postgresql', 'bridge-1', 'worker-2'] as const;
/** Per kill, for the figures: recovery time, and deliveries lost or duplicated. */
const figures: { part: string; backAfterS: number; recoveredAfterS: number; uiAfterS: number; startAttempts: number; lost: number; duplicated: number }[] = [];

/** When the Web UI (its server's API, as the browser calls it) first lists the workflow; each try cut at 3 s. */
async function uiLists(workflowId: string): Promise<number> {
  const url = `${stack.cluster.uiUrl}/api/v1/namespaces/${stack.cluster.namespace}/workflows?query=${encodeURIComponent(`WorkflowId='${workflowId}'`)}`;
  for (const deadline = Date.now() + 180_000; Date.now() < deadline; ) {
    const listed = await fetch(url, { signal: AbortSignal.timeout(3_000) }).then(
      async (res) => res.ok && ((await res.json()) as { executions?: { execution?: { workflowId?: string } }[] }).executions?.some((e) => e.execution?.workflowId === workflowId) === true,
      () => false,
    );
    if (listed) return Date.now();
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`the Web UI did not list ${workflowId} within 180 s of the kill`);
}

/** The first successful `delivery status` of a reference (the CLI's call, through the client library); each try is cut at 3 s. */
async function firstStatus(reference: string): Promise<number> {
  for (const deadline = Date.now() + 180_000; Date.now() < deadline; ) {
    const ok = await stack.temporal.withDeadline(Date.now() + 3_000, () => stack.client.getStatus(reference)).then(
      () => true,
      () => false,
    );
    if (ok) return Date.now();
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`no successful delivery status of ${reference} within 180 s of the kill`);
}

/**
 * Starts a delivery as a user would while a part is down: the client's own retries first; if
 * Temporal is still unreachable when they give up, the user tries again (the reference makes a
 * second start of the same delivery a no-op). Returns how many tries it took.
 */
async function startDuringFault(reference: string, o: DeliveryOrder): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    try {
      await stack.client.startDelivery(o, { reference });
      return attempt;
    } catch (err) {
      if (attempt >= 6) throw err;
    }
  }
}

describe.each(KILLS.map((part, i) => [part, i] as const))('SIGKILL %s, left to the stack, while a backlog drains', (part, i) => {
  test('it is started again, a delivery started within 5 s of the kill ends DELIVERED, and every workflow ends in the provider’s true state', async () => {
    const since = new Date().toISOString();
    const sinceMs = Date.now();
    const references = Array.from({ length: FAULT_BACKLOG }, (_, n) => `F${i}-${stamp}-${n}`);
    await Promise.all(references.map((reference, n) => stack.client.startDelivery(order(1000 * (i + 1) + n, n % 3 === 0), { reference })));
    const createdAtProvider = async () => (await stack.sim.deliveries()).filter((d) => references.includes(d.delivery.reference_number ?? '')).length;
    // The kill hits while orders are still waiting and earlier ones are being followed.
    await eventually('a few orders of the backlog to be created', async () => ((await createdAtProvider()) >= 5 ? true : undefined), 60_000);
    const restartsBefore = stack.part(part).restarts;

    const killedAt = Date.now();
    const pid = stack.kill(part);
    // Named like the backlog, so that providerAgrees() counts it with it.
    const probe = `F${i}-${stamp}-probe`;
    const startedAt = Date.now();
    const attempts = startDuringFault(probe, order(9000 + i));
    const recovered = firstStatus(probe);
    expect(startedAt - killedAt).toBeLessThan(5_000);
    const startAttempts = await attempts;
    const recoveredAt = await recovered;
    // An operator's Web UI keeps working too (once the frontend it talks to is there).
    const uiAt = await uiLists(`delivery:${probe}`);

    // Running again: a new process, started by the supervisor, its readiness check passed.
    const back = await eventually(`${part} to be running again`, () => (stack.part(part).state === 'running' && stack.part(part).pid !== pid ? stack.part(part) : undefined), 120_000);
    expect(back.restarts).toBeGreaterThan(restartsBefore);
    // The supervisor's own figure (its "is back after" line says the same; the output it is in keeps only the last 3 MB).
    const backAfterS = (back.backAfterMs ?? NaN) / 1000;
    expect(backAfterS).toBeGreaterThan(0);

    const probeEnd = await stack.client.result(probe);
    expect({ probe: probeEnd.status, phase: probeEnd.phase }).toEqual({ probe: 'DELIVERED', phase: 'ended' });
    const results = await resultsOf([...references, probe]);
    const drained = Date.now();
    const agreement = await providerAgrees([...references, probe], results);
    figures.push({ part, backAfterS, recoveredAfterS: (recoveredAt - killedAt) / 1000, uiAfterS: (uiAt - killedAt) / 1000, startAttempts, lost: agreement.missing.length, duplicated: agreement.duplicated.length });
    console.log(
      `SIGKILL ${part}: the stack had it back after ${backAfterS.toFixed(1)} s; first successful delivery status ${((recoveredAt - killedAt) / 1000).toFixed(1)} s after the kill, the Web UI listed it ${((uiAt - killedAt) / 1000).toFixed(1)} s after ` +
        `(the delivery started ${((startedAt - killedAt) / 1000).toFixed(1)} s after it, ${startAttempts} tr${startAttempts > 1 ? 'ies' : 'y'}); backlog of ${FAULT_BACKLOG} drained ${((drained - killedAt) / 1000).toFixed(1)} s after it`,
    );
    const log = (await stack.sim.requests()).filter((e) => e.time >= since);
    expect(log.filter((e) => e.status === 429)).toEqual([]);
    expect(agreement).toEqual({ duplicated: [], orphans: [], missing: [], disagreeing: [] });
    expect(await lostWebhooks(sinceMs)).toEqual([]);
    // Every status the provider reported for these deliveries is in the workflow's timeline (one
    // overtaken by a later status, its webhook retried after the fault, is kept marked late), but
    // for those older than a record the workflow read from the provider itself (its creation's
    // answer or a reconciliation read): a creation whose worker was killed is looked up by
    // reference, and the record found may be further along already.
    const { events } = await stack.sim.webhooks();
    const lost = [...references, probe].flatMap((r) => {
      const s = results.get(r)!;
      const entries = s.timeline.filter((t) => t.subject === 'delivery');
      const seen = new Set(entries.map((t) => t.status));
      const fromRecords = entries.filter((t) => t.source === 'provider' || t.source === 'reconciliation').map((t) => deliveryRank(t.status as DeliveryStatus) ?? -1);
      const superseded = (status: string) => (deliveryRank(status as DeliveryStatus) ?? Infinity) < Math.max(-1, ...fromRecords);
      const reported = events.filter((e) => e.delivery_id === s.deliveryId && e.destination_id === null && e.state === 'delivered').map((e) => e.status);
      return reported.filter((status) => !seen.has(status) && !superseded(status)).map((status) => `${r} ${status}`);
    });
    expect(lost).toEqual([]);
  }, 300_000);
});

test('every kill above: recovery time per part, and deliveries lost or duplicated across all of them (goal 0 and 0)', () => {
  console.log(
    [
      '| killed (SIGKILL) | back after (supervisor) | first `delivery status` after the kill | Web UI lists the delivery after | lost | duplicated |',
      '|---|---|---|---|---|---|',
      ...figures.map((f) => `| ${f.part} | ${f.backAfterS.toFixed(1)} s | ${f.recoveredAfterS.toFixed(1)} s | ${f.uiAfterS.toFixed(1)} s | ${f.lost} | ${f.duplicated} |`),
      `| all ${figures.length} kills, ${figures.length * (FAULT_BACKLOG + 1)} deliveries | | | | ${figures.reduce((n, f) => n + f.lost, 0)} | ${figures.reduce((n, f) => n + f.duplicated, 0)} |`,
    ].join('\n'),
  );
  expect(figures.map((f) => f.part)).toEqual([...KILLS]);
  expect({ lost: figures.reduce((n, f) => n + f.lost, 0), duplicated: figures.reduce((n, f) => n + f.duplicated, 0) }).toEqual({ lost: 0, duplicated: 0 });
});

// Last: it ends the stack.
test('a part killed 5 times in a row, each within seconds of its start, stops the stack with its name and last lines', async () => {
  const part = 'bridge-2';
  // Kill 0 ends a run of minutes (a failure, not a quick one); kills 1 to 5 each come as soon as it is back.
  for (let kill = 0; kill <= 5; kill++) {
    const { pid } = await eventually(`${part} to be running (kill ${kill})`, () => (stack.part(part).state === 'running' ? stack.part(part) : undefined), 120_000);
    stack.kill(part);
    await eventually(`${part}'s exit to be seen`, () => stack.part(part).pid !== pid || undefined, 10_000);
  }
  const why = await eventually('the stack to stop', () => stack.stoppedWith, 120_000);
  expect(why).toMatch(/^bridge-2 exited \(SIGKILL\): it failed 5 times in a row, each within 10 s of its start; stopping the stack\. Its last lines:\n/);
  expect(stack.group.output).toMatch(/^\[stack\] bridge-2 exited \(SIGKILL\): it failed 5 times/m);
  expect(stack.group.output).toMatch(/^\[stack\] stopped$/m);
  // Everything is down: Temporal, PostgreSQL and the bridges no longer answer.
  expect(await accepts(Number(stack.cluster.address.split(':')[1]))).toBe(false);
  expect(await accepts(stack.cluster.postgres.port)).toBe(false);
  expect(['running', 'restarting'].includes(stack.part('bridge-1').state)).toBe(false);
}, 300_000);
