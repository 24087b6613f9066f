/**
 * nginx (Debian's) in front of the webhook bridges: the simulator's webhooks reach one public
 * address and nginx spreads them over the bridge processes. A bridge that refuses connections
 * (killed, restarting) is skipped: nginx passes the request to the next bridge, which is safe
 * because it had not reached the dead one. The config is written from
 * deploy/nginx-bridges.conf with the ports filled in; nginx runs in the foreground as a child.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { accepts, stopProcess } from '../temporal-dev-server';
import type { Run } from '../supervisor';
import { childReady } from '../child-run';

export const NGINX_TEMPLATE = join(__dirname, '../../deploy/nginx-bridges.conf');

export function findNginx(log: (line: string) => void): string {
  for (const p of [process.env.NGINX_PATH, '/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/bin/nginx']) if (p && existsSync(p)) return p;
  const apt = spawnSync('sh', ['-c', 'command -v apt-get'], { encoding: 'utf8' }).stdout.trim();
  if (process.getuid?.() !== 0 || !apt) {
    throw new Error('nginx is not installed and this process cannot install it (it needs root and apt-get).\n  Install it (Debian/Ubuntu: sudo apt-get install nginx-light), or set NGINX_PATH to its binary.');
  }
  log('[nginx] installing nginx from Debian (apt-get install nginx-light)...');
  for (const args of [['update', '-qq'], ['install', '-y', '-qq', 'nginx-light']]) {
    const r = spawnSync(apt, args, { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`apt-get ${args.join(' ')} failed (exit ${r.status}):\n${(r.stderr || r.stdout).slice(-2000)}`);
  }
  if (!existsSync('/usr/sbin/nginx')) throw new Error('apt-get installed nginx-light, but /usr/sbin/nginx is missing');
  return '/usr/sbin/nginx';
}

/** The nginx config for a listen port and the bridges' ports, from the template. */
export function renderNginxConfig(o: { listenPort: number; bridgePorts: number[]; prefix: string }): string {
  return readFileSync(NGINX_TEMPLATE, 'utf8')
    .replaceAll('@PREFIX@', o.prefix)
    .replaceAll('@LISTEN_PORT@', String(o.listenPort))
    .replaceAll('@BRIDGES@', o.bridgePorts.map((p) => `server 127.0.0.1:${p} max_fails=1 fail_timeout=2s;`).join('\n    '));
}

export class LoadBalancer {
  private child?: ChildProcess;
  /** The worker processes of the master last started: a killed master leaves them serving. */
  private workers: number[] = [];

  constructor(
    private readonly o: { nginx: string; dir: string; listenPort: number; bridgePorts: number[]; output?: (line: string) => void },
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.o.listenPort}`;
  }

  async start(): Promise<Run> {
    // A master that was killed (SIGKILL: it could not stop them) leaves its workers listening,
    // with the old config, and the new master could not bind the port.
    await endOrphans(this.workers);
    mkdirSync(join(this.o.dir, 'tmp'), { recursive: true });
    const conf = join(this.o.dir, 'nginx.conf');
    writeFileSync(conf, renderNginxConfig({ listenPort: this.o.listenPort, bridgePorts: this.o.bridgePorts, prefix: this.o.dir }));
    const test = spawnSync(this.o.nginx, ['-t', '-q', '-e', 'stderr', '-p', this.o.dir, '-c', conf], { encoding: 'utf8' });
    if (test.status !== 0) throw new Error(`nginx rejected its config ${conf}:\n${test.stderr}`);
    const child = spawn(this.o.nginx, ['-e', 'stderr', '-p', this.o.dir, '-c', conf], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    return childReady(child, {
      what: 'nginx',
      where: this.url,
      output: this.o.output,
      ready: async () => {
        const workers = childrenOf(child.pid!);
        if (workers.length === 0 || !(await accepts(this.o.listenPort))) return false;
        this.workers = workers;
        return true;
      },
    });
  }

  /** SIGTERM to nginx's master: it stops its workers and exits. */
  async stop(): Promise<void> {
    if (this.child) await stopProcess(this.child, 10_000);
    await endOrphans(this.workers);
  }
}

/** The processes whose parent is `pid` (nginx's master forks its workers once it listens). */
function childrenOf(pid: number): number[] {
  const r = spawnSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' });
  return r.stdout.split('\n').filter(Boolean).map(Number);
}

/** SIGTERMs those of these nginx workers still alive (and still nginx workers), and waits until they are gone. */
async function endOrphans(pids: number[]): Promise<void> {
  const isWorker = (pid: number) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('nginx: worker');
    } catch {
      return false; // gone
    }
  };
  const alive = pids.filter(isWorker);
  for (const pid of alive) process.kill(pid, 'SIGTERM');
  for (let i = 0; i < 50 && alive.some(isWorker); i++) await new Promise((r) => setTimeout(r, 100));
}
