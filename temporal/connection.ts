// temporal/: reaching Temporal: connection settings, the payload codec, the failure converter and the codec server.
/**
 * Where Temporal is and how to reach it, the same for the worker, the bridge, the client library
 * and the CLI. Connection settings come from `@temporalio/envconfig`: the standard variables
 * (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS, TEMPORAL_TLS_*,
 * TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE, TEMPORAL_GRPC_META_*) and the Temporal config file, so
 * Temporal Cloud works by configuration alone. With nothing set: the local stack's dev server at
 * 127.0.0.1:7233, namespace `default`.
 */
import { loadClientConnectConfig } from '@temporalio/envconfig';
import { z } from 'zod';
import { parseEnv } from '../provider/validation';
import { DEFAULT_TASK_QUEUE } from '../contract/task-queues';

export const LOCAL_TEMPORAL_ADDRESS = '127.0.0.1:7233';

const TemporalEnvSchema = z.object({
  // Read by envconfig; checked here first so a mistake is named the same way as every other.
  TEMPORAL_ADDRESS: z.string().regex(/^[^\s:]+:\d{1,5}$/, { message: 'must be host:port, e.g. 127.0.0.1:7233' }).optional(),
  TEMPORAL_NAMESPACE: z.string().min(1).optional(),
  DELIVERY_TASK_QUEUE: z.string().min(1).default(DEFAULT_TASK_QUEUE),
});

export interface TemporalSettings {
  address: string;
  namespace: string;
  taskQueue: string;
  /** For `Connection.connect` and `NativeConnection.connect`: address, TLS, API key, gRPC metadata. */
  connectionOptions: { address: string; tls?: unknown; apiKey?: string; metadata?: Record<string, string> };
}

export function temporalSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): TemporalSettings {
  const e = parseEnv(TemporalEnvSchema, env, 'Temporal configuration');
  const overrideEnvVars = Object.fromEntries(Object.entries(env).filter((kv): kv is [string, string] => kv[1] !== undefined && kv[1] !== ''));
  let loaded;
  try {
    loaded = loadClientConnectConfig({ overrideEnvVars });
  } catch (err) {
    throw new Error(`invalid Temporal configuration: ${(err as Error).message}`, { cause: err });
  }
  const address = loaded.connectionOptions.address ?? LOCAL_TEMPORAL_ADDRESS;
  return {
    address,
    namespace: loaded.namespace ?? 'default',
    taskQueue: e.DELIVERY_TASK_QUEUE,
    connectionOptions: { ...loaded.connectionOptions, address } as TemporalSettings['connectionOptions'],
  };
}
