/**
 * Environment → simulator settings, validated with zod so a wrong value stops startup with a
 * message naming the variable. Empty variables count as unset.
 */
import { z } from 'zod';
import { CurrencyCode } from '../provider/schemas';
import { parseEnv } from '../provider/validation';
import { WebhookSecretSchema } from '../provider/webhook-signature';
import { DEFAULT_HOST, DEFAULT_PORT, type SimulatorOptions } from './server';

const positiveInt = z.coerce.number().int().positive();

const EnvSchema = z
  .object({
    SIMULATOR_PORT: z.coerce.number().int().min(0).max(65_535).default(DEFAULT_PORT),
    SIMULATOR_HOST: z.string().min(1).default(DEFAULT_HOST),
    /** Extra API keys, comma-separated (the default `sandbox-key` always works). */
    SIMULATOR_API_KEYS: z.string().default(''),
    SIMULATOR_TIME_SCALE: z.coerce.number().positive().max(1e9).default(1),
    SIMULATOR_CURRENCY: CurrencyCode.default('EUR'),
    SIMULATOR_AUTO_ADVANCE_MS: z.coerce.number().min(0).default(0),
    SIMULATOR_WEBHOOK_URL: z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }).optional(),
    SIMULATOR_WEBHOOK_SECRET: WebhookSecretSchema.optional(),
    SIMULATOR_SEED: z.coerce.number().int().default(1),
    SIMULATOR_PUBLIC_BASE_URL: z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }).optional(),
    /** Raise the contract's limits (e.g. for a scale benchmark); windows stay the contract's. */
    SIMULATOR_RATE_LIMIT_CREATIONS: positiveInt.optional(),
    SIMULATOR_RATE_LIMIT_QUOTES: positiveInt.optional(),
    SIMULATOR_RATE_LIMIT_OTHER: positiveInt.optional(),
    SIMULATOR_WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(1).max(600_000).default(10_000),
    /** Keep deliveries, orders, idempotency keys and pending work in this JSON file across restarts. */
    SIMULATOR_STATE_FILE: z.string().min(1).optional(),
    /** Host names accepted besides loopback (`name` or `name:port`, comma-separated), e.g. a compose service name. */
    SIMULATOR_ALLOWED_HOSTS: z.string().default(''),
  })
  .refine((e) => e.SIMULATOR_WEBHOOK_URL === undefined || e.SIMULATOR_WEBHOOK_SECRET !== undefined, {
    message: 'is required when SIMULATOR_WEBHOOK_URL is set',
    path: ['SIMULATOR_WEBHOOK_SECRET'],
  });

export interface SimulatorConfig {
  port: number;
  host: string;
  options: SimulatorOptions;
}

/** Reads the SIMULATOR_* variables; throws a message naming the variable that is wrong. */
export function simulatorConfigFromEnv(env: NodeJS.ProcessEnv = process.env): SimulatorConfig {
  const e = parseEnv(EnvSchema, env, 'simulator configuration');
  const rateLimits: NonNullable<SimulatorOptions['rateLimits']> = {};
  if (e.SIMULATOR_RATE_LIMIT_CREATIONS) rateLimits.creations = { limit: e.SIMULATOR_RATE_LIMIT_CREATIONS };
  if (e.SIMULATOR_RATE_LIMIT_QUOTES) rateLimits.quotes = { limit: e.SIMULATOR_RATE_LIMIT_QUOTES };
  if (e.SIMULATOR_RATE_LIMIT_OTHER) rateLimits.other = { limit: e.SIMULATOR_RATE_LIMIT_OTHER };
  return {
    port: e.SIMULATOR_PORT,
    host: e.SIMULATOR_HOST,
    options: {
      apiKeys: e.SIMULATOR_API_KEYS.split(',')
        .map((k) => k.trim())
        .filter(Boolean),
      timeScale: e.SIMULATOR_TIME_SCALE,
      currency: e.SIMULATOR_CURRENCY,
      autoAdvanceMs: e.SIMULATOR_AUTO_ADVANCE_MS,
      webhook: e.SIMULATOR_WEBHOOK_URL && e.SIMULATOR_WEBHOOK_SECRET ? { url: e.SIMULATOR_WEBHOOK_URL, secret: e.SIMULATOR_WEBHOOK_SECRET } : null,
      seed: e.SIMULATOR_SEED,
      publicBaseUrl: e.SIMULATOR_PUBLIC_BASE_URL,
      rateLimits,
      webhookTimeoutMs: e.SIMULATOR_WEBHOOK_TIMEOUT_MS,
      stateFile: e.SIMULATOR_STATE_FILE,
      ...(e.SIMULATOR_ALLOWED_HOSTS.trim() ? { allowedHosts: e.SIMULATOR_ALLOWED_HOSTS.split(',').map((h) => h.trim()).filter(Boolean) } : {}),
    },
  };
}
