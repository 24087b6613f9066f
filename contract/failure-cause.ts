/**
 * The reason behind a Temporal failure. An activity's, a child's, a Nexus operation's or a
 * workflow's failure reaches its caller wrapped (ActivityFailure, WorkflowFailedError,
 * HandlerError, …) with what was thrown in `cause`; a caller branches on, or shows, the first
 * ApplicationFailure of that chain. Imports only @temporalio/common, so workflow code may use it.
 */
import { ApplicationFailure } from '@temporalio/common';

/** The first ApplicationFailure in `err`'s cause chain, `err` itself included. */
export function applicationFailureIn(err: unknown): ApplicationFailure | undefined {
  for (let e: unknown = err; e; e = (e as { cause?: unknown }).cause) {
    if (e instanceof ApplicationFailure) return e;
  }
  return undefined;
}

/** Its type (`ProviderConflict`, `QuoteRejected`, …), if there is one. */
export function failureTypeIn(err: unknown): string | undefined {
  return applicationFailureIn(err)?.type ?? undefined;
}

/** What a person should read: the first ApplicationFailure, else the innermost cause (a timeout, a cancellation). */
export function reasonOf(err: unknown): Error | undefined {
  const failure = applicationFailureIn(err);
  if (failure) return failure;
  let e: unknown = err;
  while ((e as { cause?: unknown } | undefined)?.cause) e = (e as { cause: unknown }).cause;
  return e instanceof Error ? e : undefined;
}
