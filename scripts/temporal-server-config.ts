/**
 * The config files this project writes for the Temporal server and its Web UI server: the local
 * dev server's static config (the shape of the server module's config/development-sqlite.yaml,
 * all services in one process), dynamic config entries, the Nexus settings the server needs, and
 * the ui-server's config. JSON is YAML: both servers read JSON as it is written.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

type Service = 'frontend' | 'history' | 'matching' | 'worker';

export interface DevServerPorts {
  /** gRPC of the frontend: what clients and workers connect to. */
  frontend: number;
  /** The frontend's HTTP API: where Nexus operations call back when they end. */
  frontendHttp: number;
  membership: Record<Service, number>;
  grpc: Record<Exclude<Service, 'frontend'>, number>;
}

/** Renders key → value as dynamic config entries (every value for every namespace and task queue), to append to a file of them. */
export function dynamicConfigYaml(values: Readonly<Record<string, unknown>>): string {
  return Object.entries(values)
    .map(([key, value]) => `${key}:\n  - value: ${JSON.stringify(value)}\n`)
    .join('');
}

/**
 * What Nexus needs on server 1.32 (always on since 1.30) besides the frontend's HTTP port: the URL
 * a handler calls back when an asynchronous operation ends (the frontend's HTTP API; between
 * namespaces of one server it is resolved internally), and that address allowed as a callback
 * target (plain HTTP, loopback only). The Temporal CLI's dev server sets the same.
 */
export function nexusDynamicConfig(frontendHttpPort: number): Record<string, unknown> {
  const address = `127.0.0.1:${frontendHttpPort}`;
  return {
    'component.nexusoperations.callback.endpoint.template': `http://${address}/namespaces/{{.NamespaceName}}/nexus/callback`,
    'callback.allowedAddresses': [{ Pattern: address, AllowInsecure: true }],
  };
}

/**
 * SQLite as the Temporal CLI's dev server uses it, so a file it wrote opens here: one store for
 * both the workflows and visibility, one connection; a file gets its schema when new (`setup`), in
 * memory a database of its own per process.
 */
function sqlite(dbFilename: string | undefined): Record<string, unknown> {
  const where = dbFilename
    ? { databaseName: dbFilename, connectAttributes: { mode: 'rwc', setup: 'true' } }
    : { databaseName: `memory-${process.pid}-${Date.now()}`, connectAttributes: { mode: 'memory', cache: 'shared' } };
  return { pluginName: 'sqlite', connectAddr: 'localhost', connectProtocol: 'tcp', maxConns: 1, maxIdleConns: 1, ...where };
}

/** The dev server's static config and its dynamic config file's text. */
export function devServerConfig(o: {
  ports: DevServerPorts;
  dbFilename?: string;
  metricsPort?: number;
  dynamicConfigFile: string;
  dynamicConfig: Readonly<Record<string, unknown>>;
}): { server: string; dynamicConfig: string } {
  const { ports } = o;
  const rpc = (service: Service, extra: Record<string, number> = {}) => ({
    rpc: { grpcPort: service === 'frontend' ? ports.frontend : ports.grpc[service], membershipPort: ports.membership[service], bindOnIP: '127.0.0.1', ...extra },
  });
  const address = `127.0.0.1:${ports.frontend}`;
  const config = {
    log: { stdout: true, level: 'warn' },
    persistence: { defaultStore: 'sqlite-default', visibilityStore: 'sqlite-default', numHistoryShards: 1, datastores: { 'sqlite-default': { sql: sqlite(o.dbFilename) } } },
    global: {
      membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' },
      // The same metrics as every process of the cluster (deploy/temporal-cluster.yaml), so the alert rules fit both.
      ...(o.metricsPort !== undefined ? { metrics: { prometheus: { framework: 'tally', timerType: 'histogram', listenAddress: `127.0.0.1:${o.metricsPort}` } } } : {}),
    },
    services: { frontend: rpc('frontend', { httpPort: ports.frontendHttp }), history: rpc('history'), matching: rpc('matching'), worker: rpc('worker') },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: { active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: address, httpAddress: `127.0.0.1:${ports.frontendHttp}` } },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    publicClient: { hostPort: address },
    dynamicConfigClient: { filepath: o.dynamicConfigFile, pollInterval: '10s' },
  };
  return { server: JSON.stringify(config, null, 2) + '\n', dynamicConfig: dynamicConfigYaml({ ...nexusDynamicConfig(ports.frontendHttp), ...o.dynamicConfig }) };
}

/**
 * Writes the Web UI server's config into `<root>/ui-config/` and returns its arguments: bound to
 * 127.0.0.1, talking to `grpcAddress`, decrypting payloads through `codecEndpoint` when given.
 */
export function uiServerArgs(root: string, o: { grpcAddress: string; port: number; namespace: string; codecEndpoint?: string }): string[] {
  const dir = join(root, 'ui-config');
  mkdirSync(dir, { recursive: true });
  const url = `http://127.0.0.1:${o.port}`;
  const config = {
    temporalGrpcAddress: o.grpcAddress,
    host: '127.0.0.1',
    port: o.port,
    enableUi: true,
    defaultNamespace: o.namespace,
    cors: { allowOrigins: [url], cookieInsecure: true },
    codec: { endpoint: o.codecEndpoint ?? '' },
    hideLogs: true,
  };
  // The ui-server reads <root>/<config>/<env>.yaml.
  writeFileSync(join(dir, 'ui.yaml'), JSON.stringify(config, null, 2) + '\n');
  return ['--root', root, '--config', 'ui-config', '--env', 'ui', 'start'];
}
