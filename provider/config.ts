/**
 * Provider connection settings, from the environment. Sandbox and production differ only here.
 * With nothing set, the client talks to the local simulator with its default sandbox key.
 */
import { z } from 'zod';
import { parseEnv } from './validation';

export const LOCAL_SANDBOX_URL = 'http://127.0.0.1:4010';
export const LOCAL_SANDBOX_KEY = 'sandbox-key';

const ProviderEnvSchema = z.object({
  DELIVERY_API_URL: z.url({ protocol: /^https?$/, message: 'must be an http(s) URL such as https://api.example.com' }).default(LOCAL_SANDBOX_URL),
  DELIVERY_API_KEY: z.string().min(1, { message: 'must not be empty' }).default(LOCAL_SANDBOX_KEY),
  DELIVERY_API_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
  DELIVERY_API_CONNECTIONS: z.coerce.number().int().min(1).max(1024).default(16),
});

export interface ProviderConfig {
  baseUrl: string;
  apiKey: string;
  timeoutMs: number;
  connections: number;
}

/** Reads the provider settings; throws a message naming the variable that is wrong. */
export function providerConfigFromEnv(env: NodeJS.ProcessEnv = process.env): ProviderConfig {
  const e = parseEnv(ProviderEnvSchema, env, 'provider configuration');
  return { baseUrl: e.DELIVERY_API_URL, apiKey: e.DELIVERY_API_KEY, timeoutMs: e.DELIVERY_API_TIMEOUT_MS, connections: e.DELIVERY_API_CONNECTIONS };
}
