import type { z } from 'zod';
import type { FieldIssue } from './schemas';

/** `['destinations', 0, 'location', 'phone']` → `destinations[0].location.phone` */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out ? `.${String(part)}` : String(part);
  }
  return out || '(body)';
}

/** A zod error as the contract's field details: which field is wrong and why. */
export function fieldIssues(error: z.ZodError): FieldIssue[] {
  return error.issues.map((issue) => ({ field: fieldPath(issue.path), message: issue.message }));
}

/** One readable line per issue, for thrown messages and CLI output. */
export function describeIssues(issues: readonly FieldIssue[]): string {
  return issues.map((i) => `${i.field}: ${i.message}`).join('; ');
}

/**
 * Reads the variables a schema names from the environment (an empty variable counts as unset),
 * and throws a message naming each wrong variable and its rule, never its value (some are secrets).
 */
export function parseEnv<S extends z.ZodObject>(schema: S, env: NodeJS.ProcessEnv, what: string): z.output<S> {
  const raw = Object.fromEntries(Object.keys(schema.shape).map((k) => [k, env[k] === '' ? undefined : env[k]]));
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new Error(`invalid ${what}: ${describeIssues(fieldIssues(parsed.error))}`);
  return parsed.data;
}
