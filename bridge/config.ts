/** The bridge's settings from the environment. Secrets are read here and nowhere else. */
import { z } from 'zod';
import { parseEnv } from '../provider/validation';
import { WebhookSecretSchema } from '../provider/webhook-signature';
import { DEFAULT_ADMIN_PORT, DEFAULT_MAX_CONNECTIONS } from './server';

const BridgeEnvSchema = z.object({
  /** With it, every account's secrets come from the registry (accounts/registry.ts) and DELIVERY_WEBHOOK_SECRETS is not read. */
  DELIVERY_ACCOUNTS_FILE: z.string().min(1).optional(),
  DELIVERY_WEBHOOK_SECRETS: z
    .string()
    .transform((s) => s.split(/[\s,]+/).filter(Boolean))
    .pipe(z.array(WebhookSecretSchema).min(1))
    .optional(),
  BRIDGE_PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  BRIDGE_HOST: z.string().min(1).default('127.0.0.1'),
  BRIDGE_RETRY_AFTER_SECONDS: z.coerce.number().int().min(1).max(3600).default(5),
  /** The operators' listener (recent webhooks, metrics): loopback unless said otherwise. */
  BRIDGE_ADMIN_HOST: z.string().min(1).default('127.0.0.1'),
  BRIDGE_ADMIN_PORT: z.coerce.number().int().min(0).max(65535).default(DEFAULT_ADMIN_PORT),
  /** Host names the admin listener answers besides loopback (`name` or `name:port`, comma-separated). */
  BRIDGE_ADMIN_ALLOWED_HOSTS: z.string().default(''),
  BRIDGE_MAX_CONNECTIONS: z.coerce.number().int().min(1).max(1_000_000).default(DEFAULT_MAX_CONNECTIONS),
  BRIDGE_NEGATIVE_CACHE_MS: z.coerce.number().int().min(0).max(3_600_000).default(30_000),
  /** A signal to Temporal that takes longer (its retries included) is answered 503 + Retry-After. */
  BRIDGE_TEMPORAL_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(5_000),
});

const SECRETS_REQUIRED = 'is required: the webhook signing secret(s), whsec_..., separated by commas or spaces (or DELIVERY_ACCOUNTS_FILE: each account\'s own)';

export interface BridgeConfig {
  /** The registry file, when the accounts come from one. */
  accountsFile: string | undefined;
  /** The `default` account's secrets without a registry file; empty with one. */
  secrets: string[];
  port: number;
  host: string;
  retryAfterSeconds: number;
  adminHost: string;
  adminPort: number;
  adminAllowedHosts: string[];
  maxConnections: number;
  negativeCacheMs: number;
  temporalTimeoutMs: number;
}

export function bridgeConfigFromEnv(env: NodeJS.ProcessEnv = process.env): BridgeConfig {
  const e = parseEnv(BridgeEnvSchema, env, 'bridge configuration');
  if (!e.DELIVERY_ACCOUNTS_FILE && !e.DELIVERY_WEBHOOK_SECRETS) throw new Error(`invalid bridge configuration: DELIVERY_WEBHOOK_SECRETS ${SECRETS_REQUIRED}`);
  return {
    accountsFile: e.DELIVERY_ACCOUNTS_FILE,
    secrets: e.DELIVERY_ACCOUNTS_FILE ? [] : (e.DELIVERY_WEBHOOK_SECRETS ?? []),
    port: e.BRIDGE_PORT,
    host: e.BRIDGE_HOST,
    retryAfterSeconds: e.BRIDGE_RETRY_AFTER_SECONDS,
    adminHost: e.BRIDGE_ADMIN_HOST,
    adminPort: e.BRIDGE_ADMIN_PORT,
    adminAllowedHosts: e.BRIDGE_ADMIN_ALLOWED_HOSTS.split(',').map((h) => h.trim()).filter(Boolean),
    maxConnections: e.BRIDGE_MAX_CONNECTIONS,
    negativeCacheMs: e.BRIDGE_NEGATIVE_CACHE_MS,
    temporalTimeoutMs: e.BRIDGE_TEMPORAL_TIMEOUT_MS,
  };
}
