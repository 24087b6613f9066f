/**
 * Failure messages and stack traces go into Temporal's history; a provider that echoes field
 * values in its errors (or a person's reason for rejecting a quote) would put personal data
 * there in clear. With `encodeCommonAttributes`, message and stack trace travel as a payload
 * instead, which the payload codec encrypts like every other (the history shows "Encoded
 * failure"; clients and the Web UI, through the codec endpoint, decode them).
 *
 * Loaded by path (`failureConverterPath`): the workflow bundle includes it, so workflow and
 * activity failures are encoded the same way.
 */
import { DefaultFailureConverter } from '@temporalio/common';

export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
