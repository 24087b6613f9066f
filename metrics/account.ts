// metrics/: the Prometheus metrics of the worker and of the fleet view, and how they are served.
/**
 * The `account` label every worker and fleet metric carries (the helpers' shared agreement).
 * One place: while a process serves one courier account this is `default`; when the account
 * registry (accounts/) gives a process several, their ids come through here.
 */
import { DEFAULT_ACCOUNT } from '../contract/accounts';

export function metricsAccount(): string {
  return DEFAULT_ACCOUNT;
}
