/**
 * Where Temporal is, the same for the worker, the bridge, the client library and the CLI.
 * With nothing set: the local stack's dev server at 127.0.0.1:7233, namespace `default`.
 */
import { z } from 'zod';
import { parseEnv } from '../provider/validation';
import { DEFAULT_TASK_QUEUE } from '../workflows/task-queues';

const TemporalEnvSchema = z.object({
  TEMPORAL_ADDRESS: z.string().regex(/^[^\s:]+:\d{1,5}$/, { message: 'must be host:port, e.g. 127.0.0.1:7233' }).default('127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  DELIVERY_TASK_QUEUE: z.string().min(1).default(DEFAULT_TASK_QUEUE),
});

export interface TemporalSettings {
  address: string;
  namespace: string;
  taskQueue: string;
}

export function temporalSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): TemporalSettings {
  const e = parseEnv(TemporalEnvSchema, env, 'Temporal configuration');
  return { address: e.TEMPORAL_ADDRESS, namespace: e.TEMPORAL_NAMESPACE, taskQueue: e.DELIVERY_TASK_QUEUE };
}
