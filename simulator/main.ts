// simulator/: the courier's sandbox for tests, demos and benchmarks.
/**
 * `npm run simulator`: the local provider sandbox on http://127.0.0.1:4010 (SIMULATOR_HOST,
 * SIMULATOR_PORT). Prints the URL and the default sandbox key (the only key ever printed) and
 * stops cleanly on SIGINT/SIGTERM, saving its state file first (SIMULATOR_STATE_FILE). The /_sim
 * control routes have no auth: keep it on loopback.
 */
import { DEFAULT_SANDBOX_KEY } from './auth';
import { simulatorConfigFromEnv } from './config';
import { createSimulator } from './server';

async function main(): Promise<void> {
  let config;
  try {
    config = simulatorConfigFromEnv();
  } catch (e) {
    console.error(e instanceof Error ? e.message : String(e));
    process.exit(2);
  }
  const sim = createSimulator(config.options);
  const { url } = await sim.listen(config.port, config.host);
  const extra = config.options.apiKeys?.length ?? 0;
  console.log(`provider sandbox simulator listening on ${url}`);
  console.log(`  API:        ${url}/v1   (Authorization: Bearer ${DEFAULT_SANDBOX_KEY})${extra ? ` plus ${extra} key(s) from SIMULATOR_API_KEYS` : ''}`);
  console.log(`  dashboard:  ${url}/_sim   (control API, no auth: never expose it)`);
  console.log(`  time scale: ${config.options.timeScale}, auto-advance: ${config.options.autoAdvanceMs ? `${config.options.autoAdvanceMs} ms` : 'off (manual)'}`);
  if (sim.stateFile) {
    const n = sim.deliveries().length;
    console.log(`  state file: ${sim.stateFile} (${n} ${n === 1 ? 'delivery' : 'deliveries'} restored)`);
  }
  if (config.host !== '127.0.0.1' && config.host !== 'localhost' && config.host !== '::1') {
    console.warn(`  warning: bound to ${config.host}; the /_sim control API is unauthenticated`);
  }

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal}: stopping simulator`);
    sim.close().then(
      () => process.exit(0),
      (e: unknown) => {
        console.error(`error while stopping: ${String(e)}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

main().catch((e: unknown) => {
  console.error(`simulator failed to start: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
