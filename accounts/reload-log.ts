/**
 * The log line of a registry reload, the worker's and the bridge's: how many accounts were added,
 * removed and changed, and the first few ids of each. With 10,000 accounts added, a line of every
 * id would be ~120 KB that nobody reads; the counts and a sample say what happened, and the
 * registry file says the rest.
 */
import type { RegistryChange } from './registry';

/** At most this many ids of each kind on the line. */
export const LOGGED_IDS = 10;

/** `ids`, cut to LOGGED_IDS and then `…and N more` (an account id holds no space, so the last item is never an id). */
function sample(ids: string[]): string[] {
  return ids.length > LOGGED_IDS ? [...ids.slice(0, LOGGED_IDS), `…and ${ids.length - LOGGED_IDS} more`] : ids;
}

/** The fields of the line for a reload, or for a change refused (the last valid registry stays). */
export function reloadLogLine(change: RegistryChange | Error): { level: 'INFO' | 'ERROR'; msg: string } & Record<string, unknown> {
  if (change instanceof Error) return { level: 'ERROR', msg: 'account registry change refused; the last valid registry stays', error: change.message };
  const line: { level: 'INFO'; msg: string } & Record<string, unknown> = { level: 'INFO', msg: 'account registry reloaded', added: change.added.length, removed: change.removed.length, changed: change.changed.length };
  for (const kind of ['added', 'removed', 'changed'] as const) if (change[kind].length) line[`${kind}_ids`] = sample(change[kind]);
  if (change.reordered) line.reordered = true;
  return line;
}
