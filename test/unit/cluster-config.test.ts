/**
 * The pure parts of the cluster's provisioning (scripts/cluster/): where the server tools are
 * cached, schema version order, the nginx config, the port list that a start checks, and the
 * CLI's spelling of search attribute types. The processes themselves run in test/cluster/.
 */
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderNginxConfig } from '../../scripts/cluster/load-balancer';
import { compareVersions, newestSchemaVersion, schemaSteps } from '../../scripts/cluster/schema';
import { cliType, clusterPortList, defaultClusterPorts, freeClusterPorts, SERVICE_PROCESSES } from '../../scripts/cluster/temporal-cluster';
import { ensureServerTools, findServerTools, serverToolsDirs } from '../../scripts/cluster/tools';
import { temporalCliCacheDir } from '../../scripts/temporal-cli';
import { DELIVERY_SEARCH_ATTRIBUTES } from '../../contract/search-attributes';

describe('server tools', () => {
  it('are cached beside the Temporal CLI, one directory per version', () => {
    const env = { TEMPORAL_CLI_CACHE_DIR: '/cache' };
    expect(serverToolsDirs(env)).toEqual({ server: '/cache/temporal-server-v1.32.1', ui: '/cache/temporal-ui-server-v2.55.0' });
    expect(join(temporalCliCacheDir(env), '..')).toBe('/cache');
  });

  it('are found only when every tool and the schema files are there', () => {
    const dir = mkdtempSync(join(tmpdir(), 'server-tools-'));
    const env = { TEMPORAL_SERVER_TOOLS_DIR: dir };
    for (const name of ['temporal-server', 'temporal-sql-tool']) {
      writeFileSync(join(dir, name), '#!/bin/sh\n');
      chmodSync(join(dir, name), 0o755);
    }
    expect(findServerTools(env)).toBeUndefined();
    writeFileSync(join(dir, 'temporal-ui-server'), '#!/bin/sh\n');
    chmodSync(join(dir, 'temporal-ui-server'), 0o755);
    expect(findServerTools(env)).toBeUndefined();
    mkdirSync(join(dir, 'schema', 'postgresql', 'v12', 'temporal', 'versioned'), { recursive: true });
    expect(findServerTools(env)).toBeUndefined();
    mkdirSync(join(dir, 'schema', 'sqlite', 'v3', 'visibility'), { recursive: true });
    writeFileSync(join(dir, 'schema', 'sqlite', 'v3', 'visibility', 'schema.sql'), '');
    expect(findServerTools(env)).toMatchObject({ server: join(dir, 'temporal-server'), postgresSchemaDir: join(dir, 'schema', 'postgresql', 'v12') });
  });

  it('says what is missing when TEMPORAL_SERVER_TOOLS_DIR is incomplete, instead of building', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'server-tools-'));
    await expect(ensureServerTools(() => undefined, { TEMPORAL_SERVER_TOOLS_DIR: dir, PATH: '' })).rejects.toThrow(/must hold temporal-server, temporal-sql-tool, temporal-ui-server, schema\/postgresql\/v12 and schema\/sqlite\/v3/);
  });
});

describe('schema versions', () => {
  it('order numerically, not as text', () => {
    expect(['1.10', '1.9', '1.18', '1.2', '0.0'].sort(compareVersions)).toEqual(['0.0', '1.2', '1.9', '1.10', '1.18']);
    expect(compareVersions('1.18', '1.18.0')).toBe(0);
  });

  it('the newest is the highest v<x.y> directory', () => {
    const dir = mkdtempSync(join(tmpdir(), 'versioned-'));
    for (const v of ['v1.0', 'v1.9', 'v1.10', 'README']) mkdirSync(join(dir, v));
    expect(newestSchemaVersion(dir)).toBe('1.10');
  });

  it('are set up in the schema tool’s three steps', () => {
    expect(schemaSteps('visibility')).toEqual([['create-database'], ['setup-schema', '-v', '0.0'], ['update-schema', '-d', 'visibility/versioned']]);
  });
});

describe('nginx in front of the bridges', () => {
  const conf = renderNginxConfig({ listenPort: 8080, bridgePorts: [8081, 8082], prefix: '/data/nginx' });

  it('listens on 127.0.0.1 only and sends to every bridge', () => {
    expect(conf).toMatch(/listen 127\.0\.0\.1:8080;/);
    expect(conf.match(/server 127\.0\.0\.1:808[12] /g)).toEqual(['server 127.0.0.1:8081 ', 'server 127.0.0.1:8082 ']);
    expect(conf).not.toMatch(/@[A-Z_]+@/);
  });

  it('passes on to the next bridge only requests that never reached one', () => {
    expect(conf).toMatch(/proxy_next_upstream error timeout;/);
    expect(conf).not.toMatch(/proxy_next_upstream [^;]*non_idempotent/);
  });
});

describe('the ports a cluster start checks', () => {
  it('cover PostgreSQL, every service process and the UI, without duplicates', () => {
    const list = clusterPortList(defaultClusterPorts());
    expect(new Set(list.map((p) => p.port)).size).toBe(list.length);
    for (const p of SERVICE_PROCESSES.filter((s) => s.service !== 'frontend')) expect(list.some((l) => l.what === `Temporal ${p.name} (membership)`)).toBe(true);
    expect(list.find((l) => l.port === 7233)?.what).toBe('Temporal frontend (gRPC)');
    // The PostgreSQL schema keeps membership ports in a smallint.
    for (const l of list.filter((x) => x.what.includes('membership'))) expect(l.port).toBeLessThan(32768);
  });

  it('hands tests and benchmarks every port out of the ephemeral range, so no outgoing connection takes one before its process binds it', async () => {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number) as [number, number];
    const list = clusterPortList(await freeClusterPorts(true));
    expect(new Set(list.map((p) => p.port)).size).toBe(list.length);
    expect(list.filter((p) => p.port >= low && p.port <= high)).toEqual([]);
  });
});

test('search attribute types in the CLI’s spelling', () => {
  expect(DELIVERY_SEARCH_ATTRIBUTES.map((k) => cliType(k.type))).toEqual(['Keyword', 'Keyword', 'Keyword', 'Bool', 'Int', 'Int', 'Keyword', 'Datetime']);
  expect(cliType('KEYWORD_LIST')).toBe('KeywordList');
});
