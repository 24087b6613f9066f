import { devServerDynamicConfig } from '../../scripts/temporal-dev-server';
import { devServerConfig, dynamicConfigYaml, type DevServerPorts } from '../../scripts/temporal-server-config';
import { parse } from 'yaml';

const ports: DevServerPorts = {
  frontend: 7233,
  frontendHttp: 7243,
  membership: { frontend: 6933, history: 6934, matching: 6935, worker: 6939 },
  grpc: { history: 7234, matching: 7235, worker: 7239 },
};
type Config = {
  services: Record<string, { rpc: { bindOnIP: string; grpcPort: number; httpPort?: number } }>;
  persistence: { defaultStore: string; visibilityStore: string; datastores: Record<string, { sql: { databaseName: string; connectAttributes: Record<string, string> } }> };
  global: { metrics?: { prometheus: { listenAddress: string } } };
};
const render = ({ dynamicConfig, ...o }: { dbFilename?: string; metricsPort?: number; dynamicConfig?: Record<string, unknown> } = {}) => {
  const files = devServerConfig({ ports, dynamicConfigFile: '/tmp/dc.yaml', dynamicConfig: devServerDynamicConfig(dynamicConfig), ...o });
  return { server: parse(files.server) as Config, dynamic: parse(files.dynamicConfig) as Record<string, { value: unknown }[]> };
};

describe('the dev server config', () => {
  it('turns fairness on, and a value given again by the caller replaces ours instead of following it', () => {
    expect(render().dynamic['matching.enableFairness']).toEqual([{ value: true }]);
    const off = render({ dynamicConfig: { 'matching.enableFairness': false } }).dynamic;
    expect(off['matching.enableFairness']).toEqual([{ value: false }]);
    expect(off['matching.numTaskqueueReadPartitions']).toEqual([{ value: 1 }]);
  });

  it('binds every service to 127.0.0.1, and Nexus calls back to the frontend HTTP port it opens', () => {
    const { server, dynamic } = render();
    expect(Object.keys(server.services).sort()).toEqual(['frontend', 'history', 'matching', 'worker']);
    for (const s of Object.values(server.services)) expect(s.rpc.bindOnIP).toBe('127.0.0.1');
    expect(server.services.frontend!.rpc).toMatchObject({ grpcPort: 7233, httpPort: 7243 });
    expect(dynamic['component.nexusoperations.callback.endpoint.template']).toEqual([{ value: 'http://127.0.0.1:7243/namespaces/{{.NamespaceName}}/nexus/callback' }]);
    expect(dynamic['callback.allowedAddresses']).toEqual([{ value: [{ Pattern: '127.0.0.1:7243', AllowInsecure: true }] }]);
  });

  it('keeps data in the SQLite file when one is named (one store, as the CLI wrote it), else in memory', () => {
    const file = render({ dbFilename: '/data/temporal.db' }).server.persistence;
    expect(file.visibilityStore).toBe(file.defaultStore);
    expect(file.datastores[file.defaultStore]!.sql).toMatchObject({ databaseName: '/data/temporal.db', connectAttributes: { mode: 'rwc', setup: 'true' } });
    const memory = render().server.persistence;
    expect(memory.datastores[memory.defaultStore]!.sql.connectAttributes.mode).toBe('memory');
  });

  it('serves metrics on 127.0.0.1 only when a port is asked for', () => {
    expect(render().server.global.metrics).toBeUndefined();
    expect(render({ metricsPort: 9480 }).server.global.metrics?.prometheus.listenAddress).toBe('127.0.0.1:9480');
  });
});

test('dynamic config entries append to a file of them as YAML', () => {
  const text = `limit.maxIDLength:\n  - value: 255\n${dynamicConfigYaml({ 'a.b': [{ Pattern: 'x:1', AllowInsecure: true }], 'c.d': 'http://h/{{.NamespaceName}}' })}`;
  expect(parse(text)).toEqual({ 'limit.maxIDLength': [{ value: 255 }], 'a.b': [{ value: [{ Pattern: 'x:1', AllowInsecure: true }] }], 'c.d': [{ value: 'http://h/{{.NamespaceName}}' }] });
});
