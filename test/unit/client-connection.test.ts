/**
 * Closing a client connection while a call is retrying (Temporal unreachable, the bridge told to
 * stop) ends that call with a clear error; it does not crash the process from a timer.
 */
import { createServer } from 'node:net';
import { Connection } from '@temporalio/client';
import { clientInterceptors } from '../../temporal/client-connection';

/** A 127.0.0.1 port nothing listens on: every call to it fails UNAVAILABLE, which the SDK retries. */
async function refusedAddress(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return `127.0.0.1:${port}`;
}

it('a call still retrying when the connection closes rejects as CANCELLED, naming the close', async () => {
  const connection = Connection.lazy({ address: await refusedAddress(), interceptors: clientInterceptors() });
  const call = connection.workflowService.getSystemInfo({});
  await new Promise((r) => setTimeout(r, 60)); // the first attempt has failed; its retry waits on a timer (≥ 136 ms)
  await connection.close();
  // Without the guard this call never settles: its retry throws "Channel has been shut down" from the timer.
  await expect(call).rejects.toMatchObject({ code: 1, message: expect.stringContaining('the connection was closed while this call was retrying') });
}, 10_000);
