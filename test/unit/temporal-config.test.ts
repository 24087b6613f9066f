import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { temporalSettingsFromEnv } from '../../temporal/connection';

// No config file of the machine may leak into these tests.
const isolated = { TEMPORAL_CONFIG_FILE: join(mkdtempSync(join(tmpdir(), 'tcfg-')), 'none.toml') };

describe('Temporal connection settings', () => {
  it('default to the local stack', () => {
    const s = temporalSettingsFromEnv(isolated);
    expect(s).toMatchObject({ address: '127.0.0.1:7233', namespace: 'default', taskQueue: 'deliveries' });
    expect(s.connectionOptions.apiKey).toBeUndefined();
    expect(s.connectionOptions.tls).toBeUndefined();
  });

  it('reach Temporal Cloud by configuration alone: address, namespace, API key, TLS', () => {
    const s = temporalSettingsFromEnv({
      ...isolated,
      TEMPORAL_ADDRESS: 'acme.a1b2c.tmprl.cloud:7233',
      TEMPORAL_NAMESPACE: 'acme.a1b2c',
      TEMPORAL_API_KEY: 'tcld-key-123',
      DELIVERY_TASK_QUEUE: 'deliveries-eu',
    });
    expect(s).toMatchObject({ address: 'acme.a1b2c.tmprl.cloud:7233', namespace: 'acme.a1b2c', taskQueue: 'deliveries-eu' });
    expect(s.connectionOptions).toMatchObject({ apiKey: 'tcld-key-123', tls: true });
  });

  it('read a profile from the Temporal config file, environment overriding it', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'tcfg-')), 'temporal.toml');
    writeFileSync(file, '[profile.prod]\naddress = "prod.example.com:7233"\nnamespace = "deliveries"\n[profile.prod.tls]\nserver_name = "prod.example.com"\n');
    const s = temporalSettingsFromEnv({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'prod', TEMPORAL_NAMESPACE: 'deliveries-staging' });
    expect(s).toMatchObject({ address: 'prod.example.com:7233', namespace: 'deliveries-staging' });
    expect(s.connectionOptions.tls).toMatchObject({ serverNameOverride: 'prod.example.com' });
  });

  it('name the variable that is wrong', () => {
    expect(() => temporalSettingsFromEnv({ ...isolated, TEMPORAL_ADDRESS: 'no-port' })).toThrow(/TEMPORAL_ADDRESS: must be host:port/);
  });
});
