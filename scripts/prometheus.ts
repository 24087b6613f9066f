/**
 * Debian's Prometheus for a local stack (`npm run cluster`, `npm start -- --observe`, the
 * dashboard test): deploy/prometheus/prometheus.yml and alerts.yml copied into a directory of the
 * stack's own (.data/prometheus, or a test's temporary one) with targets/<job>.json written beside
 * them from the stack's ports, its TSDB there with bounded retention, its UI and API on 127.0.0.1.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { accepts, stopProcess } from './temporal-dev-server';
import type { Run } from './supervisor';
import { childReady } from './child-run';

export const PROMETHEUS_DIR = join(__dirname, '..', 'deploy', 'prometheus');
/** The scrape jobs of deploy/prometheus/prometheus.yml fed from target files. */
export const SCRAPE_JOBS = ['worker-sdk', 'worker', 'fleet', 'bridge', 'temporal'] as const;
export type ScrapeTargets = Record<(typeof SCRAPE_JOBS)[number], string[]>;
export const PROMETHEUS_PORT = 9090;

export function findPrometheus(): string {
  for (const p of [process.env.PROMETHEUS_PATH, '/usr/bin/prometheus', '/usr/local/bin/prometheus']) if (p && existsSync(p)) return p;
  throw new Error("prometheus is not installed: install Debian's package (sudo apt-get install prometheus), or set PROMETHEUS_PATH to its binary");
}

const SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600 };

/** alerts.yml with every rule's `for:` multiplied by `scale` (whole seconds, at least 1). */
export function scaleAlertFor(rules: string, scale: number): string {
  return rules.replace(/^(\s*for: )(\d+)([smh])\s*$/gm, (_line, head: string, n: string, unit: string) => `${head}${Math.max(1, Math.round(Number(n) * SECONDS[unit]! * scale))}s`);
}

/**
 * The configuration and target files in `dir`; the port replaces the self-scrape's 9090, `interval` the 10 s scrape and evaluation interval,
 * `forScale` multiplies each alert's `for:` (a test that reads alerts fire within its runbook's time, scaled; never a stack's).
 */
export function writePrometheusConfig(dir: string, targets: ScrapeTargets, port: number, interval?: string, forScale?: number): string {
  mkdirSync(join(dir, 'targets'), { recursive: true });
  const rules = readFileSync(join(PROMETHEUS_DIR, 'alerts.yml'), 'utf8');
  writeFileSync(join(dir, 'alerts.yml'), forScale === undefined ? rules : scaleAlertFor(rules, forScale));
  const config = join(dir, 'prometheus.yml');
  writeFileSync(config, readFileSync(join(PROMETHEUS_DIR, 'prometheus.yml'), 'utf8')
      .replace(`'127.0.0.1:${PROMETHEUS_PORT}'`, `'127.0.0.1:${port}'`)
      .replace(/(scrape|evaluation)_interval: 10s/g, (line) => (interval ? line.replace('10s', interval) : line)));
  for (const job of SCRAPE_JOBS) writeFileSync(join(dir, 'targets', `${job}.json`), JSON.stringify([{ targets: targets[job] }], null, 2) + '\n');
  return config;
}

export interface PrometheusOptions {
  binary: string;
  /** Config, targets and the TSDB (`data/`); never in the repository (.data/ or a temporary directory). */
  dir: string;
  port: number;
  targets: ScrapeTargets;
  /** How long samples are kept: a local stack's history, bounded. */
  retention?: string;
  /** Scrape and rule evaluation interval (10 s); a test scrapes faster. */
  interval?: string;
  /** Multiplies every alert rule's `for:` (tests only: see writePrometheusConfig). */
  forScale?: number;
  output?: (line: string) => void;
}

export class Prometheus {
  private child?: ChildProcess;

  constructor(private readonly o: PrometheusOptions) {}

  get url(): string {
    return `http://127.0.0.1:${this.o.port}`;
  }

  async start(): Promise<Run> {
    const config = writePrometheusConfig(this.o.dir, this.o.targets, this.o.port, this.o.interval, this.o.forScale);
    const child = spawn(
      this.o.binary,
      [
        `--config.file=${config}`,
        `--storage.tsdb.path=${join(this.o.dir, 'data')}`,
        `--storage.tsdb.retention.time=${this.o.retention ?? '2d'}`,
        '--storage.tsdb.retention.size=512MB',
        `--web.listen-address=127.0.0.1:${this.o.port}`,
        '--log.level=warn',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.child = child;
    // Its port opens before its storage is: the API answers 503 until /-/ready says 200.
    const ready = async () => (await accepts(this.o.port)) && (await fetch(`${this.url}/-/ready`).then((r) => r.ok, () => false));
    return childReady(child, { what: 'prometheus', where: this.url, output: this.o.output, ready });
  }

  async stop(): Promise<void> {
    if (this.child) await stopProcess(this.child, 10_000);
  }
}
