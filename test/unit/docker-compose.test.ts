/**
 * docker-compose.yml, the Dockerfile and deploy/temporal-dynamic-config.yaml cannot be run where
 * there is no Docker engine, so this keeps them in step with the code instead: the services of
 * our image set only variables the code reads (a misspelt one fails), the values compose gives
 * them pass the code's own config validation, the simulator and the bridge share the webhook
 * secret, the setup service registers exactly contract/search-attributes.ts, Temporal has one
 * partition per task queue, every published port is on 127.0.0.1, and Temporal runs what
 * `npm run cluster` runs: the same server version, static and dynamic config files and schema steps.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { parse, parseDocument } from 'yaml';
import { bridgeConfigFromEnv } from '../../bridge/config';
import { WEBHOOK_PATH } from '../../bridge/server';
import { temporalSettingsFromEnv } from '../../temporal/connection';
import { providerConfigFromEnv } from '../../provider/config';
import { schemaSteps, TEMPORAL_DATABASES } from '../../scripts/cluster/schema';
import { CLUSTER_CONFIG } from '../../scripts/cluster/temporal-cluster';
import { TEMPORAL_SERVER_VERSION, TEMPORAL_UI_SERVER_VERSION } from '../../scripts/cluster/tools';
import { DEV_SERVER_DYNAMIC_CONFIG } from '../../scripts/temporal-dev-server';
import { KeyRing } from '../../simulator/auth';
import { simulatorConfigFromEnv } from '../../simulator/config';
import { DELIVERY_SEARCH_ATTRIBUTES } from '../../contract/search-attributes';

const ROOT = join(__dirname, '..', '..');
/** Where the code that runs in our image lives; test/ and bench/ are not part of the stack. */
const SOURCE_DIRS = ['simulator', 'bridge', 'worker', 'client', 'temporal', 'contract', 'provider', 'activities', 'workflows', 'scripts'];

type Env = Record<string, string>;
type PortSpec = string | number | { target: number; published?: string | number; host_ip?: string };

interface Service {
  image?: string;
  build?: unknown;
  command?: string | string[];
  entrypoint?: string | string[];
  environment?: Record<string, string | number | boolean | null> | string[];
  env_file?: unknown;
  ports?: PortSpec[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  volumes?: (string | { type?: string; source?: string; target?: string })[];
  healthcheck?: { test?: string | string[] };
  network_mode?: string;
}

interface ComposeFile {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
}

const composeText = readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8');
const compose = parse(composeText, { merge: true }) as ComposeFile;
const services = compose.services;
const ourServices = Object.entries(services).filter(([, s]) => s.build !== undefined);

/** Host environments to resolve the file with: none set (the defaults), and all set. */
const HOST_ENVS: Record<string, Env> = {
  defaults: {},
  'variables set': {
    DELIVERY_WEBHOOK_SECRET: `whsec_${Buffer.from('a secret of the operator').toString('base64')}`,
    DELIVERY_API_KEY: 'key-of-the-operator',
    SIMULATOR_AUTO_ADVANCE_MS: '250',
    POSTGRES_PASSWORD: 'password-of-the-operator',
  },
};

// ---------------------------------------------------------------------------------------------
// Compose semantics the checks need

/** Compose's interpolation: $$, $VAR, ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?error}, ${VAR?error}, ${VAR:+alt}, ${VAR+alt}. */
function interpolate(value: string, env: Env): string {
  return value.replace(
    /\$(?:(\$)|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))/g,
    (_match, dollar: string | undefined, name: string | undefined, op: string | undefined, arg: string | undefined, bare: string | undefined) => {
      if (dollar) return '$';
      if (bare) return env[bare] ?? '';
      const v = env[name!];
      const isSet = v !== undefined;
      const nonEmpty = isSet && v !== '';
      switch (op) {
        case undefined:
          return v ?? '';
        case ':-':
          return nonEmpty ? v : arg!;
        case '-':
          return isSet ? v : arg!;
        case ':?':
        case '?':
          if (op === ':?' ? !nonEmpty : !isSet) throw new Error(`required variable ${name} is missing: ${arg}`);
          return v!;
        case ':+':
          return nonEmpty ? arg! : '';
        case '+':
          return isSet ? arg! : '';
        default:
          throw new Error(`unsupported interpolation ${op}`);
      }
    },
  );
}

/** The environment variable names a service sets, whatever the syntax (map or KEY=VALUE list). */
function envNames(service: Service): string[] {
  const e = service.environment ?? {};
  return Array.isArray(e) ? e.map((line) => line.split('=')[0]!) : Object.keys(e);
}

/** The environment the container of a service gets, with `host` as the shell's environment. */
function containerEnv(service: Service, host: Env): Env {
  const e = service.environment ?? {};
  const entries: [string, string | number | boolean | null][] = Array.isArray(e)
    ? e.map((line) => (line.includes('=') ? [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)] : [line, null]))
    : Object.entries(e);
  const out: Env = {};
  for (const [k, v] of entries) {
    if (v === null) {
      // `KEY` without a value passes the shell's value through.
      if (host[k] !== undefined) out[k] = host[k];
    } else {
      out[k] = interpolate(String(v), host);
    }
  }
  return out;
}

function service(name: string): Service {
  const s = services[name];
  if (!s) throw new Error(`docker-compose.yml has no service ${name}`);
  return s;
}

function words(v: string | string[] | undefined): string[] {
  if (v === undefined) return [];
  return Array.isArray(v) ? v : v.split(/\s+/).filter(Boolean);
}

function dependsOn(s: Service): Record<string, { condition?: string }> {
  const d = s.depends_on ?? {};
  return Array.isArray(d) ? Object.fromEntries(d.map((n) => [n, {}])) : d;
}

/** Parses a port in short (`[ip:][published:]target[/proto]`) or long syntax. */
function hostIp(port: PortSpec): string | undefined {
  if (typeof port === 'object') return port.host_ip;
  const parts = String(port).replace(/\/(tcp|udp)$/, '').split(':');
  return parts.length === 3 ? parts[0] : undefined;
}

/** Where a URL or host:port of the stack points: the service and its port. */
function target(address: string): { host: string; port: number; path: string } {
  const u = new URL(address.includes('://') ? address : `tcp://${address}`);
  return { host: u.hostname, port: Number(u.port), path: u.pathname };
}

// ---------------------------------------------------------------------------------------------
// What the code reads

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : tsFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** The `{ ... }` of every `XxxEnvSchema = z.object({ ... })`, strings and comments skipped. */
function envSchemaBlocks(source: string): string[] {
  const blocks: string[] = [];
  for (const m of source.matchAll(/\b\w*EnvSchema\s*=\s*z\s*\.\s*object\s*\(\s*\{/g)) {
    const start = m.index + m[0].length - 1;
    let depth = 0;
    for (let i = start; i < source.length; i++) {
      const c = source[i]!;
      if (c === "'" || c === '"' || c === '`') {
        for (i++; i < source.length && source[i] !== c; i++) if (source[i] === '\\') i++;
      } else if (c === '/' && source[i + 1] === '/') {
        i = source.indexOf('\n', i);
        if (i < 0) break;
      } else if (c === '/' && source[i + 1] === '*') {
        i = source.indexOf('*/', i + 2) + 1;
      } else if (c === '{') {
        depth++;
      } else if (c === '}' && --depth === 0) {
        blocks.push(source.slice(start, i + 1));
        break;
      }
    }
  }
  return blocks;
}

/**
 * Variable names a source file reads: `process.env.NAME` or `env.NAME` (not assigned to),
 * `env['NAME']`, and the keys of a zod env schema (`NAME: z...` in `XxxEnvSchema = z.object({`),
 * which simulator/config.ts reads one by one. Whole names only: DELIVERY_WEBHOOK_SECRET is not
 * read because DELIVERY_WEBHOOK_SECRETS is.
 */
function envReadsIn(source: string): Set<string> {
  const names = new Set<string>();
  for (const m of source.matchAll(/\benv\.([A-Z][A-Z0-9_]*)\b(?!\s*=(?!=))/g)) names.add(m[1]!);
  for (const m of source.matchAll(/\benv\[\s*(['"])([A-Z][A-Z0-9_]*)\1\s*\](?!\s*=(?!=))/g)) names.add(m[2]!);
  for (const block of envSchemaBlocks(source)) for (const m of block.matchAll(/^\s*([A-Z][A-Z0-9_]*)\s*:/gm)) names.add(m[1]!);
  return names;
}

const sourceFiles = SOURCE_DIRS.flatMap((d) => tsFiles(join(ROOT, d)));
const readsByFile = new Map(sourceFiles.map((f) => [f, envReadsIn(readFileSync(f, 'utf8'))]));
const readAnywhere = new Set([...readsByFile.values()].flatMap((s) => [...s]));

function resolveImport(fromFile: string, spec: string): string | undefined {
  const base = resolve(dirname(fromFile), spec);
  return [base, `${base}.ts`, join(base, 'index.ts')].find((p) => p.endsWith('.ts') && existsSync(p) && statSync(p).isFile());
}

/** The project's files an entry point loads (relative imports and requires, followed). */
function importClosure(entry: string): string[] {
  const seen = new Set<string>();
  const todo = [join(ROOT, entry)];
  while (todo.length > 0) {
    const file = todo.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const source = readFileSync(file, 'utf8');
    for (const m of source.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)(['"])(\.{1,2}\/[^'"]+)\1/g)) {
      const next = resolveImport(file, m[2]!);
      if (next) todo.push(next);
    }
  }
  return [...seen];
}

function readsOfEntry(entry: string): Set<string> {
  return new Set(importClosure(entry).flatMap((f) => [...(readsByFile.get(f) ?? envReadsIn(readFileSync(f, 'utf8')))]));
}

// ---------------------------------------------------------------------------------------------
// The Dockerfile

const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
const instructions = dockerfile
  .replace(/\\\n/g, ' ')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith('#'));
const defaultCmd = JSON.parse(instructions.filter((l) => /^CMD\s/i.test(l)).at(-1)!.replace(/^CMD\s+/i, '')) as string[];

/** The .ts entry point a service of our image runs: its command, else the image's CMD. */
function entryOf(s: Service): string {
  const argv = s.command !== undefined ? words(s.command) : defaultCmd;
  const entry = argv.find((a) => a.endsWith('.ts'));
  if (!entry) throw new Error(`no .ts entry point in ${JSON.stringify(argv)}`);
  return entry;
}

// ---------------------------------------------------------------------------------------------

describe('docker-compose.yml', () => {
  test('parses without errors or warnings, and has the services of the stack', () => {
    const doc = parseDocument(composeText, { merge: true });
    expect([...doc.errors, ...doc.warnings].map((e) => e.message)).toEqual([]);
    expect(Object.keys(services).sort()).toEqual(['bridge', 'postgresql', 'simulator', 'temporal', 'temporal-schema', 'temporal-setup', 'temporal-ui', 'worker']);
    expect(ourServices.map(([name]) => name).sort()).toEqual(['bridge', 'simulator', 'worker']);
    for (const [, s] of ourServices) expect(s.image).toBe(services.worker!.image);
  });

  describe('the environment scan', () => {
    test('finds the variables the config modules read, by whole name', () => {
      for (const name of ['SIMULATOR_WEBHOOK_SECRET', 'SIMULATOR_AUTO_ADVANCE_MS', 'DELIVERY_WEBHOOK_SECRETS', 'BRIDGE_HOST', 'TEMPORAL_ADDRESS', 'DELIVERY_API_KEY']) {
        expect(readAnywhere).toContain(name);
      }
      // Prefixes and near misses of real names are not reads.
      for (const name of ['DELIVERY_WEBHOOK_SECRET', 'SIMULATOR_WEBHOOK', 'TEMPORAL_ADDRES', 'DELIVERY_API_KEYS', 'BRIDGE_HOSTS']) {
        expect(readAnywhere).not.toContain(name);
      }
      expect(envReadsIn('process.env.FOO_BAR = "x"; env.BAZ == 1; env["QUX"]')).toEqual(new Set(['BAZ', 'QUX']));
    });

    test('sees everything the config functions read at run time', () => {
      const seen = new Set<string>();
      const recorder = new Proxy({} as NodeJS.ProcessEnv, {
        get: (_t, key) => {
          if (typeof key === 'string') seen.add(key);
          return undefined;
        },
      });
      for (const fromEnv of [simulatorConfigFromEnv, bridgeConfigFromEnv, providerConfigFromEnv, temporalSettingsFromEnv]) {
        try {
          fromEnv(recorder);
        } catch {
          // The bridge requires a secret; what it read up to that point is what counts here.
        }
      }
      expect(seen.size).toBeGreaterThan(20);
      expect([...seen].filter((n) => !readAnywhere.has(n))).toEqual([]);
    });
  });

  test.each(ourServices)('%s sets only environment variables that its code reads', (_name, s) => {
    // Everything in `environment:`, where this test can see it.
    expect(s.env_file).toBeUndefined();
    const names = envNames(s);
    expect(names.filter((n) => !readAnywhere.has(n))).toEqual([]);
    // And read by the process this service runs, not just by some other part of the project.
    const reads = readsOfEntry(entryOf(s));
    expect(names.filter((n) => !reads.has(n))).toEqual([]);
  });

  describe.each(Object.entries(HOST_ENVS))('resolved with %s', (_label, host) => {
    const sim = simulatorConfigFromEnv(containerEnv(service('simulator'), host));
    const bridgeEnv = containerEnv(service('bridge'), host);
    const workerEnv = containerEnv(service('worker'), host);

    test('each service of our image passes its own config validation', () => {
      expect(() => bridgeConfigFromEnv(bridgeEnv)).not.toThrow();
      for (const env of [workerEnv, bridgeEnv]) {
        expect(() => providerConfigFromEnv(env)).not.toThrow();
        expect(() => temporalSettingsFromEnv(env)).not.toThrow();
      }
    });

    test("the bridge's DELIVERY_WEBHOOK_SECRETS is the simulator's SIMULATOR_WEBHOOK_SECRET", () => {
      const secret = containerEnv(service('simulator'), host).SIMULATOR_WEBHOOK_SECRET;
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/=]+$/);
      expect(bridgeEnv.DELIVERY_WEBHOOK_SECRETS).toBe(secret);
      expect(bridgeConfigFromEnv(bridgeEnv).secrets).toEqual([sim.options.webhook?.secret]);
      if (host.DELIVERY_WEBHOOK_SECRET) expect(secret).toBe(host.DELIVERY_WEBHOOK_SECRET);
    });

    test("the simulator sends webhooks to the bridge's webhook path", () => {
      const url = target(sim.options.webhook!.url);
      const bridge = bridgeConfigFromEnv(bridgeEnv);
      expect(url).toEqual({ host: 'bridge', port: bridge.port, path: WEBHOOK_PATH });
      expect(bridge.host).toBe('0.0.0.0');
    });

    test('the worker and the bridge call the simulator with a key it accepts', () => {
      const keys = new KeyRing(sim.options.apiKeys);
      for (const env of [workerEnv, bridgeEnv]) {
        const provider = providerConfigFromEnv(env);
        expect(target(provider.baseUrl)).toMatchObject({ host: 'simulator', port: sim.port });
        expect(keys.authenticate(`Bearer ${provider.apiKey}`).ok).toBe(true);
        if (host.DELIVERY_API_KEY) expect(provider.apiKey).toBe(host.DELIVERY_API_KEY);
      }
      expect(sim.host).toBe('0.0.0.0');
    });

    test('the worker and the bridge use the Temporal server and namespace the setup service prepares', () => {
      const setup = containerEnv(service('temporal-setup'), host);
      for (const env of [workerEnv, bridgeEnv]) {
        const t = temporalSettingsFromEnv(env);
        expect(target(t.address)).toMatchObject({ host: 'temporal', port: 7233 });
        expect(t.address).toBe(setup.TEMPORAL_ADDRESS);
        expect(t.namespace).toBe(setup.TEMPORAL_NAMESPACE);
      }
      expect(temporalSettingsFromEnv(workerEnv).taskQueue).toBe(temporalSettingsFromEnv(bridgeEnv).taskQueue);
    });

    test("Temporal's and the schema tool's database credentials are PostgreSQL's", () => {
      const pg = containerEnv(service('postgresql'), host);
      const temporal = containerEnv(service('temporal'), host);
      const schema = containerEnv(service('temporal-schema'), host);
      expect(temporal).toMatchObject({ TEMPORAL_DB_HOST: 'postgresql', TEMPORAL_DB_PORT: '5432', TEMPORAL_DB_USER: pg.POSTGRES_USER, TEMPORAL_DB_PASSWORD: pg.POSTGRES_PASSWORD });
      expect(schema).toMatchObject({ SQL_PLUGIN: 'postgres12', SQL_HOST: 'postgresql', SQL_PORT: '5432', SQL_USER: pg.POSTGRES_USER, SQL_PASSWORD: pg.POSTGRES_PASSWORD });
      if (host.POSTGRES_PASSWORD) expect(pg.POSTGRES_PASSWORD).toBe(host.POSTGRES_PASSWORD);
    });
  });

  test('the setup service registers every search attribute of contract/search-attributes.ts with its type', () => {
    const setup = service('temporal-setup');
    const script = [...words(setup.entrypoint), ...words(setup.command)].join(' ');
    const registered: Record<string, string> = {};
    for (const call of script.split(/(?=\btemporal\s+operator\s+search-attribute\s+create\b)/).slice(1)) {
      const name = /--name[=\s]+(\w+)/.exec(call)?.[1];
      const type = /--type[=\s]+(\w+)/.exec(call)?.[1];
      expect({ name, type }).toEqual({ name: expect.any(String), type: expect.any(String) });
      registered[name!] = type!.toLowerCase();
    }
    const expected = Object.fromEntries(DELIVERY_SEARCH_ATTRIBUTES.map((k) => [k.name, k.type.replace(/_/g, '').toLowerCase()]));
    expect(registered).toEqual(expected);
  });

  test('services start in order: depends_on with conditions, on services that can meet them', () => {
    for (const [name, s] of Object.entries(services)) {
      for (const [dep, { condition }] of Object.entries(dependsOn(s))) {
        expect({ service: name, dep, condition }).toEqual({ service: name, dep, condition: expect.stringMatching(/^service_(healthy|completed_successfully|started)$/) });
        expect(services[dep]).toBeDefined();
        if (condition === 'service_healthy') expect({ dep, healthcheck: services[dep]!.healthcheck?.test }).toEqual({ dep, healthcheck: expect.anything() });
      }
    }
    expect(dependsOn(service('temporal-schema')).postgresql?.condition).toBe('service_healthy');
    expect(dependsOn(service('temporal'))['temporal-schema']?.condition).toBe('service_completed_successfully');
    expect(dependsOn(service('temporal-setup')).temporal?.condition).toBe('service_started');
    expect(dependsOn(service('worker'))['temporal-setup']?.condition).toBe('service_completed_successfully');
    expect(dependsOn(service('bridge'))['temporal-setup']?.condition).toBe('service_completed_successfully');
  });

  test('the setup service waits for the server, then registers the namespace the worker and the bridge use', () => {
    const setup = service('temporal-setup');
    const script = [...words(setup.entrypoint), ...words(setup.command)].join(' ');
    expect(script).toMatch(/until temporal operator cluster health .*SERVING/);
    expect(script).toMatch(/temporal operator namespace create/);
    expect(containerEnv(setup, {}).TEMPORAL_NAMESPACE).toBe(containerEnv(service('worker'), {}).TEMPORAL_NAMESPACE);
  });

  test('PostgreSQL keeps its data in a named volume', () => {
    const pg = service('postgresql');
    const volume = pg.volumes?.map((v) => (typeof v === 'string' ? v.split(':') : [v.source, v.target])).find(([, t]) => t === '/var/lib/postgresql/data');
    expect(volume).toBeDefined();
    expect(Object.keys(compose.volumes ?? {})).toContain(volume![0]);
  });

  test('Temporal reads the dynamic config file and the static config of `npm run cluster` from deploy/', () => {
    const temporal = service('temporal');
    const mounts = (temporal.volumes ?? []).map((v) => (typeof v === 'string' ? v.split(':') : [v.source, v.target]));
    const source = (target: string) => {
      const mount = mounts.find(([, t]) => t === target);
      expect({ target, mounted: mount !== undefined }).toEqual({ target, mounted: true });
      return relative(ROOT, resolve(ROOT, mount![0]!));
    };
    expect(source(containerEnv(temporal, {}).TEMPORAL_DYNAMIC_CONFIG_FILE!)).toBe(join('deploy', 'temporal-dynamic-config.yaml'));
    // `temporal-server --root R --config C --env E` reads R/C/E.yaml: the file scripts/cluster/ runs.
    const argv = words(temporal.command).join(' ');
    const root = /--root\s+(\S+)/.exec(argv)?.[1];
    const dir = /--config\s+(\S+)/.exec(argv)?.[1];
    const env = /--env\s+(\S+)/.exec(argv)?.[1];
    expect(argv).toMatch(/\bstart\b/);
    expect(source(join(root!, dir!, `${env}.yaml`))).toBe(relative(ROOT, CLUSTER_CONFIG));
  });

  test('the same Temporal versions as the cluster: server, schema tool and UI server', () => {
    const tag = (name: string) => service(name).image!.split(':')[1]!;
    expect(tag('temporal')).toBe(TEMPORAL_SERVER_VERSION.slice(1));
    // admin-tools: tagged by the server version alone since 1.31 (`1.29.1-tctl-1.18.4-cli-1.5.0` before).
    expect(tag('temporal-schema')).toBe(TEMPORAL_SERVER_VERSION.slice(1));
    expect(tag('temporal-setup')).toBe(tag('temporal-schema'));
    expect(tag('temporal-ui')).toBe(TEMPORAL_UI_SERVER_VERSION.slice(1));
  });

  test('the schema service runs the schema steps of `npm run cluster` for both databases', () => {
    const schema = service('temporal-schema');
    const script = interpolate(words(schema.command).join('\n'), {});
    const schemaDir = containerEnv(schema, {}).SCHEMA_DIR!;
    const steps: Record<string, string[][]> = {};
    for (const m of script.matchAll(/temporal-sql-tool --database (\w+) ([^;\n]+)/g)) {
      const args = m[2]!.trim().split(/\s+/).map((a) => a.replace(/^"|"$/g, '').replace(/^\$SCHEMA_DIR\//, ''));
      (steps[m[1]!] ??= []).push(args);
    }
    expect(steps).toEqual(Object.fromEntries(TEMPORAL_DATABASES.map((d) => [d.database, schemaSteps(d.schema)])));
    expect(schemaDir).toBe('/etc/temporal/schema/postgresql/v12');
  });

  test('every published port binds 127.0.0.1 only', () => {
    const published: string[] = [];
    for (const [name, s] of Object.entries(services)) {
      expect({ name, network_mode: s.network_mode }).toEqual({ name, network_mode: undefined });
      for (const port of s.ports ?? []) {
        published.push(`${name} ${JSON.stringify(port)}`);
        expect({ name, port, host_ip: hostIp(port) }).toEqual({ name, port, host_ip: '127.0.0.1' });
      }
    }
    expect(published.length).toBeGreaterThanOrEqual(4);
  });
});

describe('deploy/temporal-dynamic-config.yaml', () => {
  const config = parse(readFileSync(join(ROOT, 'deploy', 'temporal-dynamic-config.yaml'), 'utf8')) as Record<string, { value: unknown; constraints?: unknown }[]>;

  test.each(['matching.numTaskqueueReadPartitions', 'matching.numTaskqueueWritePartitions'])('sets %s to 1', (key) => {
    const entries = config[key];
    expect(entries?.length).toBeGreaterThan(0);
    for (const entry of entries!) expect(entry.value).toBe(1);
    // At least one entry without constraints, so that it applies to every task queue.
    expect(entries!.some((e) => e.constraints === undefined || Object.keys(e.constraints as object).length === 0)).toBe(true);
  });

  test('sets every dynamic config value the dev server of scripts/temporal-dev-server.ts sets', () => {
    const values = Object.entries(DEV_SERVER_DYNAMIC_CONFIG);
    expect(values.length).toBeGreaterThan(0);
    for (const [key, value] of values) expect({ key, values: config[key]?.map((e) => e.value) }).toEqual({ key, values: [value] });
  });
});

describe('Dockerfile', () => {
  test('node 20 on bookworm-slim, dependencies from the lockfile, a non-root user, the worker by default', () => {
    expect(instructions[0]).toBe('FROM node:20-bookworm-slim');
    expect(instructions.some((l) => /^RUN\s.*\bnpm (ci|install)\b.*--omit=dev/.test(l))).toBe(true);
    const user = instructions.filter((l) => /^USER\s/i.test(l)).at(-1)?.split(/\s+/)[1];
    expect(user).toBeDefined();
    expect(['root', '0']).not.toContain(user);
    expect(defaultCmd).toEqual(['node', '--import', 'tsx', 'worker/main.ts']);
    for (const [, s] of ourServices) expect(existsSync(join(ROOT, entryOf(s)))).toBe(true);
  });

  test('.dockerignore keeps local state out of the build context', () => {
    const ignored = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    expect(ignored).toEqual(expect.arrayContaining(['node_modules', '.data', 'test/artifacts', 'bench/results', '.git']));
    // Where docker-compose.yml's secrets may be kept: never baked into the image.
    expect(ignored).toContain('.env');
  });
});
