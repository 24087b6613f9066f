/**
 * Debian's Prometheus for an integration test (scripts/prometheus.ts), with deploy/prometheus/ as
 * the stack uses it, in a temporary directory removed on stop, and its HTTP API as functions.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findPrometheus, Prometheus, type ScrapeTargets } from '../../scripts/prometheus';
import { freePort } from '../../scripts/temporal-dev-server';

export interface Series {
  metric: Record<string, string>;
  value: [number, string];
}
export interface Alert {
  labels: Record<string, string>;
  state: string;
}
export interface Rule {
  name: string;
  state: string;
  health: string;
  lastError?: string;
}

export interface TestPrometheus {
  url: string;
  /** An instant query; a query Prometheus refuses throws, naming it. */
  query(expr: string): Promise<Series[]>;
  alerts(): Promise<Alert[]>;
  rules(): Promise<Rule[]>;
  stop(): Promise<void>;
}

async function get<T>(url: string): Promise<T> {
  const body = (await (await fetch(url)).json()) as { status: string; error?: string; data: T };
  if (body.status !== 'success') throw new Error(`${url}: ${body.error}`);
  return body.data;
}

export async function startTestPrometheus(targets: ScrapeTargets, o: { interval: string; forScale?: number }): Promise<TestPrometheus> {
  const dir = mkdtempSync(join(tmpdir(), 'delivery-prometheus-'));
  const prometheus = new Prometheus({ binary: findPrometheus(), dir, port: await freePort(), interval: o.interval, forScale: o.forScale, retention: '1h', targets });
  try {
    await prometheus.start();
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const api = `${prometheus.url}/api/v1`;
  return {
    url: prometheus.url,
    query: async (expr) => (await get<{ result: Series[] }>(`${api}/query?${new URLSearchParams({ query: expr })}`).catch((err: Error) => Promise.reject(new Error(`${expr} fails: ${err.message}`)))).result,
    alerts: async () => (await get<{ alerts: Alert[] }>(`${api}/alerts`)).alerts,
    rules: async () => (await get<{ groups: { rules: Rule[] }[] }>(`${api}/rules`)).groups.flatMap((g) => g.rules),
    stop: async () => {
      await prometheus.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
