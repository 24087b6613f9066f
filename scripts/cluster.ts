/**
 * `npm run cluster`: the local stack of `npm start` (same URLs and ports, data under .data/),
 * with Temporal as a production-shaped cluster instead of the dev server:
 *   - PostgreSQL in .data/cluster/postgresql on 127.0.0.1:5433 (initdb on first run; installed
 *     from Debian where missing and possible), schema created and upgraded with temporal-sql-tool;
 *   - Temporal v1.32.1: frontend (127.0.0.1:7233), 2 history, 2 matching and the worker service,
 *     each its own OS process (scripts/cluster/temporal-cluster.ts, deploy/temporal-cluster.yaml,
 *     dynamic config deploy/temporal-dynamic-config.yaml), 4 history shards;
 *   - the Web UI (ui-server, http://127.0.0.1:8233) decrypting through the codec endpoint (:8234);
 *   - the simulator (:4010), 2 delivery worker processes, 2 bridge processes behind nginx on
 *     :8080, where the simulator sends its webhooks;
 *   - the fleet view (:9470) and Prometheus (UI http://127.0.0.1:9090, data .data/prometheus)
 *     scraping every worker's two metrics endpoints, the fleet view, the bridges and each Temporal
 *     service process (scripts/observe.ts).
 * The server tools are built with Go once and cached (scripts/cluster/tools.ts). A process that
 * exits is started again while the rest keep serving (scripts/supervisor.ts); Ctrl-C stops
 * everything; the next run finds the same workflows, deliveries and keys.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generatePayloadKey, LOCAL_STACK_KEYS_FILE } from '../temporal/payload-codec';
import { generateWebhookSecret } from '../provider/webhook-signature';
import { LoadBalancer, findNginx } from './cluster/load-balancer';
import { SERVICE_PROCESSES, TemporalCluster, assertPortsFree, clusterPortList, defaultClusterPorts } from './cluster/temporal-cluster';
import { ensureServerTools } from './cluster/tools';
import { ensureTemporalCli } from './temporal-cli';
import { ENTRY, localStack } from './processes';
import { setUpLocalNexus } from './nexus-setup';
import { makeStackVersionCurrent } from './deployment-on-start';
import { describeMetrics, fleetMetricsEnv, metricsPortList, stackTargets, startStackPrometheus, temporalMetricsPorts, workerMetricsEnv } from './observe';
import { PROMETHEUS_PORT, type Prometheus } from './prometheus';

const root = join(__dirname, '..');
const dataDir = join(root, '.data');
const SIMULATOR_PORT = 4010;
const LB_PORT = 8080;
const BRIDGE_PORTS = [8082, 8083];
/** Each bridge's operator page and metrics, on loopback (the first where `npm start` has its one). */
const BRIDGE_ADMIN_PORTS = [8081, 8084];
const CODEC_PORT = 8234;
const WORKERS = Number(process.env.CLUSTER_WORKERS ?? 2);
const SIMULATOR_URL = `http://127.0.0.1:${SIMULATOR_PORT}`;
const LB_URL = `http://127.0.0.1:${LB_PORT}`;
const CODEC_URL = `http://127.0.0.1:${CODEC_PORT}`;

let cluster: TemporalCluster | undefined;
let lb: LoadBalancer | undefined;
let prometheus: Prometheus | undefined;

function log(line: string): void {
  process.stdout.write(line.startsWith('[') ? `${line}\n` : `[cluster] ${line}\n`);
}

/** Each Temporal service process's own /metrics. */
const TEMPORAL_METRICS = temporalMetricsPorts(SERVICE_PROCESSES.map((p) => p.name));

const services = localStack('cluster', log, async () => {
  await prometheus?.stop();
  await lb?.stop();
  await cluster?.stop();
});

async function main(): Promise<void> {
  mkdirSync(dataDir, { recursive: true });
  const ports = defaultClusterPorts();

  // Before minutes of building: everything this stack listens on must be free.
  await assertPortsFree([
    ...clusterPortList(ports),
    { port: SIMULATOR_PORT, what: 'provider simulator' },
    { port: LB_PORT, what: 'nginx, the webhook bridges' },
    ...BRIDGE_PORTS.map((port, i) => ({ port, what: `webhook bridge ${i + 1}` })),
    ...BRIDGE_ADMIN_PORTS.map((port, i) => ({ port, what: `webhook bridge ${i + 1}'s admin listener` })),
    { port: CODEC_PORT, what: 'codec endpoint' },
    ...metricsPortList(WORKERS),
    ...Object.entries(TEMPORAL_METRICS).map(([name, port]) => ({ port, what: `Temporal ${name}'s metrics` })),
    { port: Number(process.env.PROMETHEUS_PORT ?? PROMETHEUS_PORT), what: 'Prometheus' },
  ]);

  if (!existsSync(LOCAL_STACK_KEYS_FILE)) writeFileSync(LOCAL_STACK_KEYS_FILE, generatePayloadKey('local') + '\n', { mode: 0o600 });
  const payloadKeys = readFileSync(LOCAL_STACK_KEYS_FILE, 'utf8').trim();
  const secretFile = join(dataDir, 'webhook-secret');
  if (!existsSync(secretFile)) writeFileSync(secretFile, generateWebhookSecret(), { mode: 0o600 });
  const webhookSecret = readFileSync(secretFile, 'utf8').trim();

  const nginx = findNginx(log);
  const cli = await ensureTemporalCli(log);
  const tools = await ensureServerTools(log);

  cluster = new TemporalCluster({
    tools,
    cli,
    dataDir: join(dataDir, 'cluster'),
    ports,
    metricsPorts: TEMPORAL_METRICS,
    codecEndpoint: CODEC_URL,
    log,
    // Temporal: warnings and errors (deploy/temporal-cluster.yaml's log level); PostgreSQL: only
    // what ends a session or the server (its ERROR lines are the statements Temporal retries).
    output: (name, line) => {
      if (name !== 'postgresql' || /\b(FATAL|PANIC):/.test(line)) process.stdout.write(`[${name}] ${line}\n`);
    },
    // Each process is started again when it exits, as Kubernetes or systemd would (scripts/supervisor.ts).
    supervisor: services.supervisor,
  });
  await cluster.start();
  // Order systems in their own namespace call the deliveries through Nexus (examples/nexus-order-system).
  await setUpLocalNexus(cluster.address, cluster.namespace, log);

  const temporalEnv = { TEMPORAL_ADDRESS: cluster.address, TEMPORAL_NAMESPACE: cluster.namespace, DELIVERY_PAYLOAD_KEYS: payloadKeys };
  await services.startSimulator({ port: SIMULATOR_PORT, webhookUrl: `${LB_URL}/webhooks/delivery`, webhookSecret, dataDir });
  await Promise.all([
    ...Array.from({ length: WORKERS }, (_, i) => services.start(`worker-${i + 1}`, ENTRY.worker.entry, { ...temporalEnv, DELIVERY_API_URL: SIMULATOR_URL, WORKER_MAKE_CURRENT: 'never', ...workerMetricsEnv(i) }, ENTRY.worker.ready)),
    services.start('fleet', ENTRY.fleet.entry, { ...temporalEnv, ...fleetMetricsEnv() }, ENTRY.fleet.ready),
    ...BRIDGE_PORTS.map((port, i) =>
      services.start(`bridge-${i + 1}`, ENTRY.bridge.entry, { ...temporalEnv, DELIVERY_API_URL: SIMULATOR_URL, DELIVERY_WEBHOOK_SECRETS: webhookSecret, BRIDGE_PORT: String(port), BRIDGE_ADMIN_PORT: String(BRIDGE_ADMIN_PORTS[i]) }, ENTRY.bridge.ready),
    ),
    services.start('codec', ENTRY.codec.entry, { DELIVERY_PAYLOAD_KEYS: payloadKeys, CODEC_ALLOWED_ORIGIN: cluster.uiUrl }, ENTRY.codec.ready),
  ]);
  await makeStackVersionCurrent(temporalEnv, log);
  lb = new LoadBalancer({ nginx, dir: join(dataDir, 'cluster', 'nginx'), listenPort: LB_PORT, bridgePorts: BRIDGE_PORTS, output: (l) => process.stdout.write(`[nginx] ${l}\n`) });
  await services.supervise('nginx', () => lb!.start());
  const scraped = { workers: WORKERS, bridgeAdminPorts: BRIDGE_ADMIN_PORTS, temporal: Object.values(TEMPORAL_METRICS).map((p) => `127.0.0.1:${p}`) };
  prometheus = await startStackPrometheus({ dataDir, targets: stackTargets(scraped), supervise: services.supervise, log });

  log('');
  log('the local cluster is up:');
  log(`  Temporal         ${cluster.address} (namespace ${cluster.namespace}): frontend, 2 history, 2 matching, worker service`);
  log(`  PostgreSQL       127.0.0.1:${ports.postgres} (data .data/cluster/postgresql, user temporal, password in .data/cluster/postgres-password)`);
  log(`  Temporal Web UI  ${cluster.uiUrl}`);
  log(`  provider sandbox ${SIMULATOR_URL} (API key: sandbox-key; dashboard ${SIMULATOR_URL}/_sim)`);
  log(`  webhook bridges  ${LB_URL}/webhooks/delivery (nginx → ${BRIDGE_PORTS.map((p) => `127.0.0.1:${p}`).join(', ')}); recent webhooks and metrics ${BRIDGE_ADMIN_PORTS.map((p) => `http://127.0.0.1:${p}/`).join(', ')}`);
  log(`  codec endpoint   ${CODEC_URL}`);
  log(`  delivery workers ${WORKERS} processes`);
  for (const line of describeMetrics(scraped)) log(line);
  log(`  Prometheus       ${prometheus.url} (alerts: ${prometheus.url}/alerts; data .data/prometheus, kept 2 days)`);
  log('try, in another terminal:');
  log('  npx delivery create --reference DEMO-1 --order docs/examples/order.json --watch');
  log('  temporal operator cluster describe');
  log('Ctrl-C stops everything; data stays in .data/');
}

void services.run(main);
