/**
 * Provider connection settings, from the environment. Sandbox and production differ only here.
 * With nothing set, the client talks to the local simulator with its default sandbox key.
 */
import { z } from 'zod';
import { DEFAULT_RETRY_AFTER_CAP_MS } from './errors';
import { isLoopbackHost } from './http-guard';
import { parseEnv } from './validation';

export const LOCAL_SANDBOX_URL = 'http://127.0.0.1:4010';
export const LOCAL_SANDBOX_KEY = 'sandbox-key';

const ProviderEnvSchema = z
  .object({
    DELIVERY_API_URL: z.url({ protocol: /^https?$/, message: 'must be an http(s) URL such as https://api.example.com' }).default(LOCAL_SANDBOX_URL),
    /**
     * `true` lets the API key travel over plain http to a host that is not loopback: only for a
     * sandbox on a private network (the compose stack's simulator), never for the real API.
     */
    DELIVERY_API_ALLOW_HTTP: z.enum(['true', 'false']).default('false'),
    DELIVERY_API_KEY: z.string().min(1, { message: 'must not be empty' }).default(LOCAL_SANDBOX_KEY),
    DELIVERY_API_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
    DELIVERY_API_CONNECTIONS: z.coerce.number().int().min(1).max(1024).default(16),
    /** The longest Retry-After honoured; a longer one is cut to this (logged and counted). */
    DELIVERY_API_RETRY_AFTER_CAP_MS: z.coerce.number().int().min(1_000).max(24 * 3_600_000).default(DEFAULT_RETRY_AFTER_CAP_MS),
  })
  .refine((e) => e.DELIVERY_API_ALLOW_HTTP === 'true' || isSafeApiUrl(e.DELIVERY_API_URL), {
    message: 'must be https:// (the API key would travel in clear); http:// only to loopback, or with DELIVERY_API_ALLOW_HTTP=true for a sandbox on a private network',
    path: ['DELIVERY_API_URL'],
  });

/** https anywhere; http only to this machine. */
export function isSafeApiUrl(url: string): boolean {
  const u = new URL(url);
  return u.protocol === 'https:' || isLoopbackHost(u.hostname);
}

export interface ProviderConfig {
  baseUrl: string;
  apiKey: string;
  timeoutMs: number;
  connections: number;
  retryAfterCapMs: number;
}

/** Reads the provider settings; throws a message naming the variable that is wrong. */
export function providerConfigFromEnv(env: NodeJS.ProcessEnv = process.env): ProviderConfig {
  const e = parseEnv(ProviderEnvSchema, env, 'provider configuration');
  return { baseUrl: e.DELIVERY_API_URL, apiKey: e.DELIVERY_API_KEY, timeoutMs: e.DELIVERY_API_TIMEOUT_MS, connections: e.DELIVERY_API_CONNECTIONS, retryAfterCapMs: e.DELIVERY_API_RETRY_AFTER_CAP_MS };
}
