import { removeRunBundle } from './workflow-bundle';

export default async function globalTeardown(): Promise<void> {
  await globalThis.__temporalDevServer?.stop();
  globalThis.__temporalDevServer = undefined;
  removeRunBundle();
}
