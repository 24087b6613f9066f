/**
 * Every client connection of ours (client library, CLI, bridge, scripts, tests, benches) opens
 * here, so all of them survive `close()` with a call still retrying.
 *
 * Why: the SDK retries a failed call (UNAVAILABLE, RESOURCE_EXHAUSTED, ...) from a `setTimeout`
 * that `Connection.close()` does not clear, and grpc-js throws "Channel has been shut down"
 * synchronously when that timer fires on a closed channel: an uncaught exception, off any awaited
 * path, that crashes the process (the bridge on SIGTERM while Temporal is down, the CLI, a test
 * file that happens to run next in the same jest worker). Below the SDK's retry interceptor, a
 * call made on a closed channel ends as CANCELLED instead, so the caller's promise rejects and
 * the retry loop stops there.
 */
import { InterceptingCall, Metadata, status, type Interceptor } from '@grpc/grpc-js';
import { Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor, type ConnectionOptions } from '@temporalio/client';

const CLOSED = 'Channel has been shut down';

/** A call that never reached the channel: it ends at once with CANCELLED and the reason. */
function endedCall(details: string): InterceptingCall {
  return new InterceptingCall({
    start(_metadata, listener) {
      setImmediate(() => {
        try {
          listener?.onReceiveStatus?.({ code: status.CANCELLED, details, metadata: new Metadata() });
        } catch {
          // The SDK's retry interceptor (@temporalio/client grpc-retry.ts) hands the status on
          // through the message callback of the call's first attempt, which it only has if that
          // attempt got a message: a long poll that failed over and then met the closed channel
          // throws "savedMessageNext is not a function" here, from a timer, off any awaited path.
          // The call's caller then never hears back; the process is not brought down.
        }
      });
    },
    cancelWithStatus: () => undefined,
    getPeer: () => '',
    sendMessageWithContext: () => undefined,
    sendMessage: () => undefined,
    startRead: () => undefined,
    halfClose: () => undefined,
    getAuthContext: () => null,
  });
}

const endCallsAfterClose: Interceptor = (options, nextCall) => {
  try {
    return new InterceptingCall(nextCall(options));
  } catch (err) {
    if ((err as Error).message === CLOSED) return endedCall(`${CLOSED}: the connection was closed while this call was retrying`);
    throw err;
  }
};

/** Temporal's default retries, then the closed-channel guard (interceptors run first to last, the last nearest the channel). */
export const clientInterceptors = (): Interceptor[] => [makeGrpcRetryInterceptor(defaultGrpcRetryOptions()), endCallsAfterClose];

export function connectClient(options: ConnectionOptions): Promise<Connection> {
  return Connection.connect({ ...options, interceptors: clientInterceptors() });
}
