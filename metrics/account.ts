// metrics/: the Prometheus metrics of the worker and of the fleet view, and how they are served.
/**
 * The `account` label every worker and fleet metric carries (the helpers' shared agreement).
 * One place: a metric that concerns no account in particular, or a process that serves the one
 * `default` account, carries this; a provider call carries its own account's id (worker/main.ts),
 * a bounded label, since only the registry's accounts have clients.
 */
import { DEFAULT_ACCOUNT } from '../contract/accounts';

export function metricsAccount(): string {
  return DEFAULT_ACCOUNT;
}
