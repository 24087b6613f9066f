/**
 * `npx tsx examples/nexus-order-system/main.ts [reference] [--cancel] [--account <id>]` with
 * `npm start` (or `npm run cluster`) running: the order system's worker in the namespace `orders`
 * (ORDERS_NAMESPACE), and one order workflow on it that has its delivery made through the Nexus
 * endpoint `deliveries` (ORDERS_ENDPOINT). Prints the outcome once the delivery has ended (the
 * simulator advances it every 5 s). With --cancel the order cancels its delivery 3 s after it
 * started; with --account, the delivery is that courier account's.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, WorkflowNotFoundError } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import type { DeliveryOrder } from '../../contract/delivery-types';
import { connectClient } from '../../temporal/client-connection';
import { temporalSettingsFromEnv } from '../../temporal/connection';
import { dataConverterFromEnv } from '../../temporal/payload-codec';
import { deliveryWorkflowId } from '../../contract/workflow-ids';
import { cancelDeliverySignal, DELIVERIES_ENDPOINT, orderWorkflow } from './workflows';

/**
 * A demo waits for the result: the delivery's own default keeps its workflow open 10 minutes after
 * the end for late statuses (docs/notifications.md), which an order system in production keeps.
 */
const DEMO_FOLLOW_UP = { endGraceMs: 5_000 };

const NAMESPACE = process.env.ORDERS_NAMESPACE || 'orders';
const ENDPOINT = process.env.ORDERS_ENDPOINT || undefined;
const TASK_QUEUE = 'order-system';

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') }); // the worker's warnings only
  const args = process.argv.slice(2);
  const accountAt = args.indexOf('--account');
  const account = accountAt >= 0 ? args.splice(accountAt, 2)[1] : undefined;
  const reference = args.find((a) => !a.startsWith('--')) ?? `NEXUS-${Date.now().toString(36).toUpperCase()}`;
  const { address } = temporalSettingsFromEnv();
  // The deliveries' payloads are encrypted (docs/payload-encryption.md): the order system uses the
  // same codec, or it could not read what the service answers. Here: the local stack's key.
  const dataConverter = dataConverterFromEnv();
  const native = await NativeConnection.connect({ address });
  const connection = await connectClient({ address });
  const worker = await Worker.create({ connection: native, namespace: NAMESPACE, taskQueue: TASK_QUEUE, workflowsPath: require.resolve('./workflows'), dataConverter });
  const client = new Client({ connection, namespace: NAMESPACE, dataConverter });
  const order = JSON.parse(readFileSync(join(__dirname, '../../docs/examples/order.json'), 'utf8')) as DeliveryOrder;

  const outcome = await worker.runUntil(async () => {
    const handle = await client.workflow.start(orderWorkflow, { taskQueue: TASK_QUEUE, workflowId: `order:${reference}`, args: [{ reference, account, order, endpoint: ENDPOINT, followUp: DEMO_FOLLOW_UP }] });
    console.log(`order workflow order:${reference} in namespace ${NAMESPACE}: its delivery is ${deliveryWorkflowId(reference, account)}, through the Nexus endpoint ${ENDPOINT ?? DELIVERIES_ENDPOINT}`);
    if (args.includes('--cancel')) {
      await new Promise((r) => setTimeout(r, 3_000));
      // A delivery that ended already (the simulator can be fast) has nothing left to cancel.
      const sent = await handle.signal(cancelDeliverySignal).then(
        () => true,
        (err: unknown) => (err instanceof WorkflowNotFoundError ? false : Promise.reject(err)),
      );
      console.log(sent ? 'asked to cancel the delivery' : 'the order had ended before the cancellation');
    }
    return handle.result();
  });

  if (outcome.quote) console.log(`quoted ${outcome.quote.price.amount} ${outcome.quote.price.currency} (minor units)`);
  const final = outcome.delivered ?? outcome.cancelled;
  console.log(`delivery ${final?.deliveryId ?? '(none created)'}: ${final?.status ?? final?.phase}${final?.cancellation ? `, cancellation: ${final.cancellation.outcome}` : ''}`);
  for (const d of final?.destinations ?? []) console.log(`  ${d.id} ${d.status} ${d.trackingUrl}`);
  await connection.close();
  await native.close();
}

main().catch((err: Error) => {
  console.error(`nexus-order-system: ${err.message}`);
  process.exit(1);
});
