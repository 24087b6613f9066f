/**
 * A /metrics listener for one prom-client Registry (the worker's own metrics, the fleet view).
 * Loopback by default like every listener here; GET /metrics only, nothing else is served.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface MetricsListener {
  /** `http://host:port/metrics`, the port chosen by the system when 0 was asked. */
  url: string;
  close(): Promise<void>;
}

/** `host:port` as the *_METRICS_ADDRESS variables take it (checked by their schemas). */
export function splitAddress(address: string): { host: string; port: number } {
  const at = address.lastIndexOf(':');
  return { host: address.slice(0, at), port: Number(address.slice(at + 1)) };
}

export async function serveMetrics(registry: Registry, address: string): Promise<MetricsListener> {
  const { host, port } = splitAddress(address);
  const server: Server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') return void res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /metrics\n');
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      (err: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${err.message}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, host, resolve));
  const bound = server.address() as AddressInfo;
  return {
    url: `http://${host}:${bound.port}/metrics`,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

/** The zod rule of a `host:port` metrics address variable. */
export const METRICS_ADDRESS = /^[^\s:]+:\d{1,5}$/;
