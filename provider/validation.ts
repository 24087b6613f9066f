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
