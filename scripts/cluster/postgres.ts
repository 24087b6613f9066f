/**
 * PostgreSQL for the cluster, in a data directory the project owns (initdb once, then reused),
 * listening on 127.0.0.1 on its own port (no Unix socket), as a child process that can be
 * stopped, killed and started again on the same data.
 *
 * PostgreSQL refuses to run as root: when this runs as root, the data directory is given to the
 * `postgres` system user (Debian's package creates it) and initdb and the server run as that user.
 * The binaries come from POSTGRES_BIN_DIR, else Debian's /usr/lib/postgresql/<version>/bin; where
 * they are missing and this runs as root with apt-get, `postgresql` is installed from Debian.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { accepts } from '../temporal-dev-server';
import type { Run } from '../supervisor';

type Log = (line: string) => void;

export interface PostgresOptions {
  /** The data directory (created by initdb on first use). */
  dataDir: string;
  port: number;
  /** Superuser created by initdb; Temporal connects as this user. */
  user: string;
  password: string;
  log: Log;
  /** Where the server's output goes, line by line. */
  output?: (line: string) => void;
}

function installedBinDir(env: NodeJS.ProcessEnv): string | undefined {
  if (env.POSTGRES_BIN_DIR) return env.POSTGRES_BIN_DIR;
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return undefined;
  const versions = readdirSync(base)
    .filter((v) => existsSync(join(base, v, 'bin', 'postgres')) && existsSync(join(base, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(base, versions[0], 'bin') : undefined;
}

/** The directory of `postgres` and `initdb`, installing Debian's package where that is possible. */
export function ensurePostgresBinaries(log: Log, env: NodeJS.ProcessEnv = process.env): string {
  const found = installedBinDir(env);
  if (found) {
    if (!existsSync(join(found, 'postgres'))) throw new Error(`POSTGRES_BIN_DIR=${found} holds no postgres binary`);
    return found;
  }
  const apt = spawnSync('sh', ['-c', 'command -v apt-get'], { encoding: 'utf8' }).stdout.trim();
  if (process.getuid?.() !== 0 || !apt) {
    throw new Error(
      'PostgreSQL is not installed and this process cannot install it (it needs root and apt-get).\n' +
        '  Install it (Debian/Ubuntu: sudo apt-get install postgresql), or set POSTGRES_BIN_DIR to the directory of its postgres and initdb binaries.',
    );
  }
  log('[postgresql] installing PostgreSQL from Debian (apt-get install postgresql; a minute or two)...');
  for (const args of [['update', '-qq'], ['install', '-y', '-qq', 'postgresql']]) {
    const r = spawnSync(apt, args, { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`apt-get ${args.join(' ')} failed (exit ${r.status}):\n${(r.stderr || r.stdout).slice(-2000)}`);
  }
  const installed = installedBinDir(env);
  if (!installed) throw new Error('apt-get installed postgresql, but no /usr/lib/postgresql/<version>/bin/postgres was found');
  log(`[postgresql] installed (${installed})`);
  return installed;
}

/** The uid/gid PostgreSQL runs as: ours, or the `postgres` user's when we are root. */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const uid = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
  if (uid.status !== 0 || gid.status !== 0) {
    throw new Error('PostgreSQL refuses to run as root and there is no `postgres` user to run it as: create one (useradd --system postgres) or run as a non-root user.');
  }
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

export class Postgres {
  private child?: ChildProcess;
  private exited?: Promise<string>;
  private recent = '';
  private readonly bin: string;
  private readonly owner = runAs();

  constructor(
    private readonly o: PostgresOptions,
    env: NodeJS.ProcessEnv = process.env,
  ) {
    this.bin = ensurePostgresBinaries(o.log, env);
  }

  get port(): number {
    return this.o.port;
  }

  get dataDir(): string {
    return this.o.dataDir;
  }

  get running(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** initdb on first use: a superuser with a password, scram over TCP, nothing else. */
  init(): void {
    if (existsSync(join(this.o.dataDir, 'PG_VERSION'))) return;
    mkdirSync(this.o.dataDir, { recursive: true, mode: 0o700 });
    const pwfile = join(this.o.dataDir, '..', `.pg-password-${process.pid}`);
    writeFileSync(pwfile, this.o.password + '\n', { mode: 0o600 });
    if (this.owner) {
      chownSync(this.o.dataDir, this.owner.uid, this.owner.gid);
      chownSync(pwfile, this.owner.uid, this.owner.gid);
    }
    this.o.log(`[postgresql] initdb ${this.o.dataDir}`);
    const r = spawnSync(join(this.bin, 'initdb'), ['-D', this.o.dataDir, '-U', this.o.user, `--pwfile=${pwfile}`, '--auth-host=scram-sha-256', '--auth-local=scram-sha-256', '-E', 'UTF8', '--locale=C.UTF-8'], {
      encoding: 'utf8',
      ...this.owner,
      cwd: '/',
    });
    rmSync(pwfile, { force: true });
    if (r.status !== 0) throw new Error(`PostgreSQL's initdb failed (exit ${r.status}) for ${this.o.dataDir}:\n${(r.stderr || r.stdout).slice(-2000)}`);
  }

  /** Starts the server and waits until it accepts connections; rejects with its output if it cannot start. */
  async start(timeoutMs = 60_000): Promise<Run> {
    this.init();
    const args = ['-D', this.o.dataDir, '-p', String(this.o.port), '-c', 'listen_addresses=127.0.0.1', '-c', "unix_socket_directories=", '-c', 'max_connections=200', '-c', 'fsync=on'];
    this.recent = '';
    const child = spawn(join(this.bin, 'postgres'), args, { stdio: ['ignore', 'pipe', 'pipe'], ...this.owner, cwd: '/' });
    this.child = child;
    const exited = (this.exited = new Promise((r) => child.once('exit', (code, signal) => r(signal ?? `code ${code}`))));
    const onData = (chunk: Buffer) => {
      this.recent = (this.recent + chunk.toString()).slice(-4000);
      for (const line of chunk.toString().split('\n').filter(Boolean)) this.o.output?.(line);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (!this.running) throw new Error(`PostgreSQL could not start (data ${this.o.dataDir}, port ${this.o.port}):\n${this.recent.trim()}`);
      if (/ready to accept connections/.test(this.recent) && (await accepts(this.o.port))) return { pid: child.pid, exited, lastLines: () => this.recent };
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`PostgreSQL did not accept connections on 127.0.0.1:${this.o.port} within ${timeoutMs} ms:\n${this.recent.trim()}`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** Fast shutdown (SIGINT: open transactions are rolled back, the data is flushed). */
  async stop(): Promise<void> {
    if (!this.running) return;
    const timer = setTimeout(() => this.child?.kill('SIGKILL'), 30_000);
    this.child!.kill('SIGINT');
    await this.exited;
    clearTimeout(timer);
  }

  /** Runs one SQL statement with psql (unaligned, tuples only) and returns its output or its error. */
  query(database: string, sql: string): { ok: boolean; out: string } {
    const psql = existsSync(join(this.bin, 'psql')) ? join(this.bin, 'psql') : 'psql';
    const r = spawnSync(psql, ['-h', '127.0.0.1', '-p', String(this.o.port), '-U', this.o.user, '-d', database, '-tAc', sql], {
      encoding: 'utf8',
      env: { ...process.env, PGPASSWORD: this.o.password, PGCONNECT_TIMEOUT: '5' },
    });
    return { ok: r.status === 0, out: (r.status === 0 ? r.stdout : r.stderr || r.stdout).trim() };
  }
}

/** A password kept beside the data, made once (the database keeps its hash). */
export function storedPassword(file: string, make: () => string): string {
  if (!existsSync(file)) writeFileSync(file, make() + '\n', { mode: 0o600 });
  return readFileSync(file, 'utf8').trim();
}
