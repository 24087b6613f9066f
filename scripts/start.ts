// scripts/: running the stack: npm start, npm run cluster, process and Temporal CLI provisioning, generated documents.
/**
 * `npm start`: the whole local stack in one command.
 *   - a Temporal dev server (gRPC 127.0.0.1:7233, Web UI http://127.0.0.1:8233, data in .data/),
 *   - the provider simulator (http://127.0.0.1:4010) with statuses advancing on their own, its
 *     webhooks pointed at the bridge, and its state kept in .data/simulator-state.json,
 *   - the delivery worker,
 *   - the webhook bridge (http://127.0.0.1:8080), sharing a webhook secret with the simulator,
 *   - the codec endpoint (http://127.0.0.1:8234) through which the Web UI decrypts payloads,
 *   - the fleet view (fleet/, metrics on :9470), and each process's metrics (scripts/observe.ts),
 *   - with `npm start -- --observe`, Prometheus scraping them all (UI http://127.0.0.1:9090,
 *     data in .data/prometheus, alert rules deploy/prometheus/alerts.yml), and Jaeger (scripts/jaeger.ts,
 *     built once with Go) receiving the worker's and the bridge's traces (OTEL_EXPORTER_OTLP_ENDPOINT).
 * With DELIVERY_ACCOUNTS_FILE, the worker and the bridge serve every account of the registry, and
 * each is registered in the simulator (scripts/accounts-on-start.ts).
 * The simulator, worker, bridge and codec endpoint are started again when they exit
 * (scripts/supervisor.ts). Ctrl-C stops everything; started again, the dev server finds its workflows where it left them
 * and the simulator their deliveries (which go on advancing, their pending webhooks resent).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generatePayloadKey, LOCAL_STACK_KEYS_FILE } from '../temporal/payload-codec';
import { parseEnv } from '../provider/validation';
import { LOCAL_SANDBOX_KEY } from '../provider/config';
import { generateWebhookSecret, secretFingerprint, WebhookSecretSchema } from '../provider/webhook-signature';
import { z } from 'zod';
import { ensureServerTools } from './cluster/tools';
import { describeEndpoints, notifyConfigFromEnv } from '../notifications/config';
import { ENTRY, localStack } from './processes';
import { setUpLocalNexus } from './nexus-setup';
import { makeStackVersionCurrent } from './deployment-on-start';
import { setUpLocalAccounts } from './accounts-on-start';
import { startDevServer, type DevServer } from './temporal-dev-server';
import { ensureJaeger, startJaeger, type RunningJaeger } from './jaeger';
import { DEV_SERVER_METRICS_PORT, JAEGER_PORTS, describeMetrics, fleetMetricsEnv, stackTargets, startStackPrometheus, workerMetricsEnv } from './observe';
import type { Prometheus } from './prometheus';

const root = join(__dirname, '..');
const dataDir = join(root, '.data');
const TEMPORAL_PORT = Number(process.env.TEMPORAL_PORT ?? 7233);
const TEMPORAL_UI_PORT = Number(process.env.TEMPORAL_UI_PORT ?? 8233);
const SIMULATOR_PORT = 4010;
const SIMULATOR_URL = `http://127.0.0.1:${SIMULATOR_PORT}`;
const BRIDGE_URL = 'http://127.0.0.1:8080';
const BRIDGE_ADMIN_URL = 'http://127.0.0.1:8081';
const CODEC_URL = 'http://127.0.0.1:8234';

/** `npm start -- --observe`: Prometheus and Jaeger too, and traces on. */
const OBSERVE = process.argv.slice(2).includes('--observe');

let devServer: DevServer | undefined;
let prometheus: Prometheus | undefined;
let jaeger: RunningJaeger | undefined;

function log(line: string): void {
  process.stdout.write(`[start] ${line}\n`);
}

const services = localStack('start', log, async () => {
  await prometheus?.stop();
  await jaeger?.stop();
  await devServer?.stop();
});

/** The secrets from DELIVERY_WEBHOOK_SECRETS (checked like the bridge does), or the local file's. */
function webhookSecrets(): { secrets: string[]; source: string } {
  if (process.env.DELIVERY_WEBHOOK_SECRETS?.trim()) {
    const schema = z.object({ DELIVERY_WEBHOOK_SECRETS: z.string().transform((v) => v.split(/[\s,]+/).filter(Boolean)).pipe(z.array(WebhookSecretSchema).min(1)) });
    return { secrets: parseEnv(schema, process.env, 'webhook secrets').DELIVERY_WEBHOOK_SECRETS, source: 'from DELIVERY_WEBHOOK_SECRETS' };
  }
  const secretFile = join(dataDir, 'webhook-secret');
  if (!existsSync(secretFile)) writeFileSync(secretFile, generateWebhookSecret(), { mode: 0o600 });
  const secret = readFileSync(secretFile, 'utf8').trim();
  const checked = WebhookSecretSchema.safeParse(secret);
  if (!checked.success) throw new Error(`${secretFile}: ${checked.error.issues[0]?.message ?? 'not a webhook secret'}; delete the file to have a new one made`);
  return { secrets: [secret], source: `from ${secretFile}` };
}

async function main(): Promise<void> {
  mkdirSync(dataDir, { recursive: true });

  // Personal data is encrypted in Temporal; the key is made once and kept with the data (the
  // history is unreadable without it). The Web UI decrypts through the codec endpoint.
  if (!existsSync(LOCAL_STACK_KEYS_FILE)) writeFileSync(LOCAL_STACK_KEYS_FILE, generatePayloadKey('local') + '\n', { mode: 0o600 });
  const payloadKeys = readFileSync(LOCAL_STACK_KEYS_FILE, 'utf8').trim();

  // The worker reads DELIVERY_NOTIFY_ENDPOINTS / _SECRETS from this environment; checked here first so a mistake stops the start at once.
  const notifyEndpoints = describeEndpoints(notifyConfigFromEnv());
  const tools = await ensureServerTools((l) => log(l));
  log('starting the Temporal dev server...');
  devServer = await startDevServer({
    tools,
    port: TEMPORAL_PORT,
    uiPort: TEMPORAL_UI_PORT,
    dbFilename: join(dataDir, 'temporal.db'),
    codecEndpoint: CODEC_URL,
    metricsPort: DEV_SERVER_METRICS_PORT,
  });
  log(`Temporal server ${devServer.serverVersion} on ${devServer.address}`);
  // Order systems in their own namespace call the deliveries through Nexus (examples/nexus-order-system).
  await setUpLocalNexus(devServer.address, devServer.namespace, log);

  // The signing secret(s): DELIVERY_WEBHOOK_SECRETS when set (the simulator signs with the
  // first, the bridge accepts them all), else the local sandbox's, kept with the data so webhooks
  // still being retried after a restart keep verifying. Named by fingerprint, never printed.
  const webhook = webhookSecrets();
  log(`webhook secret: ${webhook.source}, fingerprint ${secretFingerprint(webhook.secrets[0]!)}${webhook.secrets.length > 1 ? ` (+${webhook.secrets.length - 1} more accepted by the bridge)` : ''}`);
  const webhookSecret = webhook.secrets[0]!;
  const temporalEnv = { TEMPORAL_ADDRESS: devServer.address, TEMPORAL_NAMESPACE: devServer.namespace, DELIVERY_PAYLOAD_KEYS: payloadKeys };

  await services.startSimulator({ port: SIMULATOR_PORT, webhookUrl: `${BRIDGE_URL}/webhooks/delivery`, webhookSecret, dataDir });
  // Accounts: the worker, the bridge and the fleet view (its ids only) read the local copy of the registry (never the operator's file directly: see accounts-on-start.ts).
  // Their key and secrets for a registry's `{"env": …}` references (docs/accounts.md): the local sandbox's unless set.
  const providerEnv = { DELIVERY_API_KEY: process.env.DELIVERY_API_KEY?.trim() || LOCAL_SANDBOX_KEY, DELIVERY_WEBHOOK_SECRETS: webhook.secrets.join(',') };
  const registryFile = process.env.DELIVERY_ACCOUNTS_FILE?.trim();
  const accounts = registryFile ? await setUpLocalAccounts({ registryFile, dataDir, simulatorUrl: SIMULATOR_URL, bridgeUrl: BRIDGE_URL, log, env: { ...process.env, ...providerEnv } }) : undefined;
  const accountsEnv = accounts ? { DELIVERY_ACCOUNTS_FILE: accounts.file } : {};
  // Traces: the worker and the bridge export to the local Jaeger, the one setting that turns tracing on.
  if (OBSERVE) jaeger = await startJaeger(await ensureJaeger(log), { ports: JAEGER_PORTS });
  const tracingEnv = jaeger ? { OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpUrl } : {};
  await Promise.all([
    services.start('worker', ENTRY.worker.entry, { ...temporalEnv, ...accountsEnv, ...tracingEnv, ...providerEnv, DELIVERY_API_URL: SIMULATOR_URL, WORKER_MAKE_CURRENT: 'never', ...workerMetricsEnv(0) }, ENTRY.worker.ready),
    services.start('fleet', ENTRY.fleet.entry, { ...temporalEnv, ...accountsEnv, ...fleetMetricsEnv() }, ENTRY.fleet.ready),
    services.start('bridge', ENTRY.bridge.entry, { ...temporalEnv, ...accountsEnv, ...tracingEnv, ...providerEnv, DELIVERY_API_URL: SIMULATOR_URL }, ENTRY.bridge.ready),
    services.start('codec', ENTRY.codec.entry, { DELIVERY_PAYLOAD_KEYS: payloadKeys, CODEC_ALLOWED_ORIGIN: devServer.uiUrl }, ENTRY.codec.ready),
  ]);
  await makeStackVersionCurrent(temporalEnv, log);
  const scraped = { workers: 1, bridgeAdminPorts: [Number(new URL(BRIDGE_ADMIN_URL).port)], temporal: [`127.0.0.1:${DEV_SERVER_METRICS_PORT}`] };
  if (OBSERVE) prometheus = await startStackPrometheus({ dataDir, targets: stackTargets(scraped), supervise: services.supervise, log });

  log('');
  log('the local stack is up:');
  log(`  Temporal         ${devServer.address} (server ${devServer.serverVersion}, namespace ${devServer.namespace})`);
  log(`  Temporal Web UI  ${devServer.uiUrl}`);
  log(`  provider sandbox ${SIMULATOR_URL} (API key: sandbox-key; dashboard ${SIMULATOR_URL}/_sim)`);
  log(`  webhook bridge   ${BRIDGE_URL}/webhooks/delivery${accounts ? '/<account>' : ''} (recent webhooks and metrics: ${BRIDGE_ADMIN_URL}/, loopback only)`);
  if (accounts) log(`  accounts         ${registryFile} (copy for the worker and bridge: ${accounts.file})`);
  log(`  codec endpoint   ${CODEC_URL} (the Web UI decrypts payloads through it)`);
  for (const line of describeMetrics(scraped)) log(line);
  log(prometheus ? `  Prometheus       ${prometheus.url} (alerts: ${prometheus.url}/alerts; data .data/prometheus, kept 2 days)` : '  Prometheus       not started (npm start -- --observe runs it)');
  log(jaeger ? `  Jaeger           ${jaeger.queryUrl} (query API; this build serves no UI), traces in at ${jaeger.otlpUrl}` : '  Jaeger           not started, tracing off (npm start -- --observe runs it)');
  log(`  notifications    endpoints: ${notifyEndpoints} (DELIVERY_NOTIFY_ENDPOINTS); order workflows by signal: notify.workflowId`);
  log('try, in another terminal:');
  log('  npx delivery create --reference DEMO-1 --order docs/examples/order.json --watch');
  if (jaeger) {
    log(`  OTEL_EXPORTER_OTLP_ENDPOINT=${jaeger.otlpUrl} npx delivery create --reference DEMO-2 --order docs/examples/order.json   (traced from its start)`);
    log('  npx delivery status DEMO-2   (its trace id), then npm run trace -- <trace id>');
  }
  log('  npx tsx examples/nexus-order-system/main.ts   (an order workflow in namespace orders, through Nexus)');
  log('Ctrl-C stops everything; data stays in .data/');
}

void services.run(main);
