/**
 * Temporal's two PostgreSQL databases (`temporal`, `temporal_visibility`), created and upgraded
 * with the server's own schema tool (temporal-sql-tool), the steps docker-compose.yml's
 * temporal-schema service runs too (test/unit/docker-compose.test.ts compares them):
 *   create-database, setup-schema -v 0.0, update-schema -d <schema>/versioned.
 * A database set up before skips the first two; update-schema then applies only newer versions.
 * A database whose schema is newer than this server's is refused: the server would misread it.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Postgres } from './postgres';

export const TEMPORAL_DATABASES = [
  { database: 'temporal', schema: 'temporal' },
  { database: 'temporal_visibility', schema: 'visibility' },
] as const;

/** The schema tool's commands for one database, as docker-compose.yml runs them (schema dir relative to schema/postgresql/v12). */
export function schemaSteps(schema: 'temporal' | 'visibility'): string[][] {
  return [['create-database'], ['setup-schema', '-v', '0.0'], ['update-schema', '-d', `${schema}/versioned`]];
}

/** Orders versions like `1.9` < `1.10`. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** The newest schema version in a versioned/ directory (its v<x.y> subdirectories). */
export function newestSchemaVersion(versionedDir: string): string {
  const versions = readdirSync(versionedDir)
    .filter((d) => /^v\d+(\.\d+)*$/.test(d))
    .map((d) => d.slice(1))
    .sort(compareVersions);
  const newest = versions.at(-1);
  if (!newest) throw new Error(`no schema versions in ${versionedDir}`);
  return newest;
}

/** The schema version recorded in a database, or undefined where it has none yet. */
export function currentSchemaVersion(pg: Postgres, database: string): string | undefined {
  const exists = pg.query('postgres', `SELECT 1 FROM pg_database WHERE datname = '${database}'`);
  if (!exists.ok) throw new Error(`cannot query PostgreSQL on 127.0.0.1:${pg.port}: ${exists.out}`);
  if (exists.out !== '1') return undefined;
  const table = pg.query(database, "SELECT to_regclass('schema_version') IS NOT NULL");
  if (table.out !== 't') return undefined;
  const v = pg.query(database, `SELECT curr_version FROM schema_version WHERE version_partition = 0 AND db_name = '${database}'`);
  return v.ok && v.out ? v.out : undefined;
}

export interface SchemaOptions {
  sqlTool: string;
  /** schema/postgresql/v12 of the server module. */
  schemaDir: string;
  pg: Postgres;
  user: string;
  password: string;
  log: (line: string) => void;
  /** The server's version, for messages. */
  serverVersion: string;
}

/** Creates or upgrades both databases; returns each one's schema version afterwards. */
export function ensureSchema(o: SchemaOptions): Record<string, string> {
  const result: Record<string, string> = {};
  for (const { database, schema } of TEMPORAL_DATABASES) {
    const newest = newestSchemaVersion(join(o.schemaDir, schema, 'versioned'));
    const current = currentSchemaVersion(o.pg, database);
    if (current && compareVersions(current, newest) > 0) {
      throw new Error(
        `The ${database} database's schema is version ${current}, newer than Temporal server ${o.serverVersion} knows (${newest}): ` +
          'it was set up by a newer server. Run that server version, or start from an empty data directory.',
      );
    }
    const steps = schemaSteps(schema).filter(([cmd]) => !current || cmd === 'update-schema');
    if (!current) o.log(`[schema] creating ${database} (schema ${newest})`);
    else if (current !== newest) o.log(`[schema] upgrading ${database} from ${current} to ${newest}`);
    for (const step of steps) {
      const args = step[0] === 'update-schema' ? ['update-schema', '-d', join(o.schemaDir, step[2]!)] : step;
      const r = spawnSync(o.sqlTool, args, {
        encoding: 'utf8',
        env: {
          ...process.env,
          SQL_PLUGIN: 'postgres12',
          SQL_HOST: '127.0.0.1',
          SQL_PORT: String(o.pg.port),
          SQL_USER: o.user,
          SQL_PASSWORD: o.password,
          SQL_DATABASE: database,
        },
      });
      if (r.status !== 0) throw new Error(`temporal-sql-tool ${args.join(' ')} (database ${database}) failed (exit ${r.status}):\n${(r.stderr || r.stdout).slice(-2000)}`);
    }
    result[database] = currentSchemaVersion(o.pg, database) ?? '?';
  }
  return result;
}
