/** The bridge's settings from the environment. Secrets are read here and nowhere else. */
import { z } from 'zod';
import { parseEnv } from '../provider/validation';
import { WebhookSecretSchema } from '../provider/webhook-signature';

const BridgeEnvSchema = z.object({
  DELIVERY_WEBHOOK_SECRETS: z
    .string({ message: 'is required: the webhook signing secret(s), whsec_..., separated by commas or spaces' })
    .transform((s) => s.split(/[\s,]+/).filter(Boolean))
    .pipe(z.array(WebhookSecretSchema).min(1)),
  BRIDGE_PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  BRIDGE_HOST: z.string().min(1).default('127.0.0.1'),
  BRIDGE_RETRY_AFTER_SECONDS: z.coerce.number().int().min(1).max(3600).default(5),
});

export interface BridgeConfig {
  secrets: string[];
  port: number;
  host: string;
  retryAfterSeconds: number;
}

export function bridgeConfigFromEnv(env: NodeJS.ProcessEnv = process.env): BridgeConfig {
  const e = parseEnv(BridgeEnvSchema, env, 'bridge configuration');
  return { secrets: e.DELIVERY_WEBHOOK_SECRETS, port: e.BRIDGE_PORT, host: e.BRIDGE_HOST, retryAfterSeconds: e.BRIDGE_RETRY_AFTER_SECONDS };
}
