/**
 * A dev server's SQLite file across Temporal upgrades. The server sets up a new file's schema
 * itself but never upgrades an existing one (its SQLite store has no schema versions), so a file
 * written by the Temporal CLI v1.5.1's dev server (server 1.29.1, `npm start` before this version)
 * would open with visibility broken: every list and count fails on `no such column:
 * TemporalReportedProblems`. Before the server opens a file, this upgrades it to the schema of the
 * server module's own files (schema/sqlite/v3, kept beside the server tools):
 *   - visibility: the table is rebuilt from the new schema (generated columns cannot be added to
 *     an SQLite table) and every row copied, its search attributes indexed again by the new triggers;
 *   - the workflows' store: the tables the new schema adds (CREATE TABLE IF NOT EXISTS).
 * It runs in one transaction with the `sqlite3` shell (the server's schema tool cannot parse the
 * visibility schema's triggers), after a copy of the file is kept beside it (never removed here).
 * Which server a file is for is kept in `<file>.server-version`; a file without it predates this
 * project's server bump and is taken as 1.29.1's.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { onPath } from './temporal-cli';
import { TEMPORAL_SERVER_VERSION } from './cluster/tools';

/** The columns of executions_visibility that are not generated, the same in 1.29.1 and 1.32.1: what a rebuild copies. */
const VISIBILITY_COLUMNS = [
  'namespace_id', 'run_id', '_version', 'start_time', 'execution_time', 'workflow_id', 'workflow_type_name', 'status', 'close_time',
  'history_length', 'history_size_bytes', 'execution_duration', 'state_transition_count', 'memo', 'encoding', 'task_queue',
  'search_attributes', 'parent_workflow_id', 'parent_run_id', 'root_workflow_id', 'root_run_id',
].join(', ');

const OLD_TABLE = 'executions_visibility_before_upgrade';

export const versionFile = (dbFilename: string) => `${dbFilename}.server-version`;

/** The server version a file was last opened by: undefined for a new file, `v1.29.1` for one older than the version file. */
export function dataServerVersion(dbFilename: string): string | undefined {
  if (!existsSync(dbFilename)) return undefined;
  return existsSync(versionFile(dbFilename)) ? readFileSync(versionFile(dbFilename), 'utf8').trim() : 'v1.29.1';
}

/** The SQL that brings a 1.29.1 file to the schema in `sqliteSchemaDir` (comments dropped). */
export function upgradeSql(sqliteSchemaDir: string): string {
  const visibility = readFileSync(join(sqliteSchemaDir, 'visibility', 'schema.sql'), 'utf8');
  const temporal = readFileSync(join(sqliteSchemaDir, 'temporal', 'schema.sql'), 'utf8');
  const names = (re: RegExp) => [...visibility.matchAll(re)].map((m) => m[1]!);
  const statements = [
    'BEGIN;',
    // The old table's triggers, full-text tables and indexes go first: their names are taken again.
    ...names(/CREATE TRIGGER (\w+)/g).map((n) => `DROP TRIGGER IF EXISTS ${n};`),
    ...names(/CREATE VIRTUAL TABLE (\w+)/g).map((n) => `DROP TABLE IF EXISTS ${n};`),
    ...names(/CREATE INDEX (\w+)/g).map((n) => `DROP INDEX IF EXISTS ${n};`),
    `ALTER TABLE executions_visibility RENAME TO ${OLD_TABLE};`,
    visibility,
    `INSERT INTO executions_visibility (${VISIBILITY_COLUMNS}) SELECT ${VISIBILITY_COLUMNS} FROM ${OLD_TABLE};`,
    `DROP TABLE ${OLD_TABLE};`,
    // Only its CREATE statements: the rest (a first row of namespace_metadata) is in the file already.
    ...temporal
      .replace(/--.*$/gm, '')
      .split(';')
      .map((st) => st.trim())
      .filter((st) => /^CREATE (TABLE|INDEX|UNIQUE INDEX) /.test(st))
      .map((st) => `${st.replace(/^CREATE (TABLE|INDEX|UNIQUE INDEX) /, 'CREATE $1 IF NOT EXISTS ')};`),
    'COMMIT;',
  ];
  return statements.join('\n').replace(/--.*$/gm, '');
}

/**
 * Makes `dbFilename` ready for this server: a new file is only marked; one written by an older
 * server is copied to `<file>.before-<version>` and upgraded. Throws, leaving the file as it was,
 * when it cannot (no `sqlite3`, or the file is newer than this server).
 */
export function prepareDevServerData(dbFilename: string, sqliteSchemaDir: string, log: (line: string) => void, env: NodeJS.ProcessEnv = process.env): void {
  const version = dataServerVersion(dbFilename);
  if (version === TEMPORAL_SERVER_VERSION) return;
  if (version === undefined) {
    writeFileSync(versionFile(dbFilename), `${TEMPORAL_SERVER_VERSION}\n`);
    return;
  }
  if (version !== 'v1.29.1') {
    throw new Error(`${dbFilename} was last opened by Temporal server ${version}, which this project does not upgrade from (it runs ${TEMPORAL_SERVER_VERSION}). Run the version that wrote it, or move the file away to start with empty data.`);
  }
  const sqlite3 = onPath('sqlite3', env);
  if (!sqlite3) {
    throw new Error(
      `${dbFilename} was written by Temporal server 1.29.1 (the Temporal CLI v1.5.1's dev server); server ${TEMPORAL_SERVER_VERSION} needs its schema upgraded first, ` +
        'which takes the sqlite3 shell (Debian: apt-get install sqlite3). Nothing was changed. Install it and start again, or finish the open ' +
        'workflows on the previous version of this project, or move the file away to start with empty data.',
    );
  }
  const backup = `${dbFilename}.before-${TEMPORAL_SERVER_VERSION}`;
  log(`${dbFilename} was written by Temporal server 1.29.1: upgrading its schema to ${TEMPORAL_SERVER_VERSION} (a copy stays in ${backup})`);
  if (!existsSync(backup)) copyFileSync(dbFilename, backup);
  const r = spawnSync(sqlite3, ['-bail', dbFilename], { input: upgradeSql(sqliteSchemaDir), encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`upgrading ${dbFilename} failed (sqlite3 exit ${r.status}; the file is as it was, a copy in ${backup}):\n${(r.stderr || r.stdout).slice(-2000)}`);
  writeFileSync(versionFile(dbFilename), `${TEMPORAL_SERVER_VERSION}\n`);
}
