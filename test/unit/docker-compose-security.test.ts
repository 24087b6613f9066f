/**
 * docker-compose.yml and issue 17: personal data encrypted (keys from a file, as a compose
 * secret), the simulator answering the name the worker and bridge call it by, the bridge's admin
 * listener published on loopback only.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { providerConfigFromEnv } from '../../provider/config';
import { simulatorConfigFromEnv } from '../../simulator/config';

interface Service {
  environment?: Record<string, string>;
  secrets?: (string | { source: string; target?: string })[];
  ports?: string[];
}
const compose = parse(readFileSync(join(__dirname, '..', '..', 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
  secrets?: Record<string, { file?: string }>;
};

test('the worker and the bridge encrypt with keys from a mounted file', () => {
  expect(compose.secrets?.['payload-keys']?.file).toBe('${DELIVERY_PAYLOAD_KEYS_FILE:-./.data/payload-keys}');
  for (const name of ['worker', 'bridge']) {
    const s = compose.services[name]!;
    expect(s.secrets).toContain('payload-keys');
    expect(s.environment?.DELIVERY_PAYLOAD_KEYS_FILE).toBe('/run/secrets/payload-keys');
  }
});

test('the simulator answers the host name its callers use, and they may use plain http only by saying so', () => {
  const sim = simulatorConfigFromEnv({ SIMULATOR_ALLOWED_HOSTS: compose.services.simulator!.environment!.SIMULATOR_ALLOWED_HOSTS });
  for (const name of ['worker', 'bridge']) {
    const env = compose.services[name]!.environment!;
    const url = new URL(env.DELIVERY_API_URL!);
    expect(sim.options.allowedHosts).toContain(url.host);
    expect(() => providerConfigFromEnv({ ...env, DELIVERY_API_ALLOW_HTTP: undefined } as NodeJS.ProcessEnv)).toThrow(/DELIVERY_API_URL: must be https/);
  }
});

test("the bridge's admin listener is published on 127.0.0.1 only, on its own port", () => {
  const bridge = compose.services.bridge!;
  expect(bridge.environment?.BRIDGE_ADMIN_PORT).toBe('8081');
  expect(bridge.ports).toContain('127.0.0.1:8081:8081');
});
