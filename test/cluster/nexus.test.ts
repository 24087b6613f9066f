/**
 * Issue #27 on the production-shaped cluster (server 1.32.1 on PostgreSQL, services in their own
 * processes, with the Nexus settings scripts/cluster/temporal-cluster.ts gives it): an order
 * system in the `orders` namespace has its deliveries made through the Nexus endpoint by a
 * delivery worker process, payloads encrypted as in production (the order system shares the
 * codec). The same scenarios as on the dev server (test/temporal/nexus.test.ts).
 */
import { dataConverterFromEnv } from '../../temporal/payload-codec';
import { ClusterStack } from '../helpers/cluster';
import { orderSystemScenarios, startOrderSystem, type DeliverySide, type OrderSystem } from '../helpers/nexus-orders';

let stack: ClusterStack;
let side: DeliverySide;
let orders: OrderSystem;

beforeAll(async () => {
  stack = await ClusterStack.start({ workers: 1 });
  side = {
    address: stack.cluster.address,
    namespace: stack.cluster.namespace,
    taskQueue: stack.env.DELIVERY_TASK_QUEUE!,
    dataConverter: dataConverterFromEnv(stack.env),
    deliveries: stack.client,
    temporal: stack.temporal,
    async driveToDelivered(deliveryId) {
      for (let i = 0; i < 50; i++) if ((await stack.sim.advance(deliveryId)).status === 'DELIVERED') return;
      throw new Error(`delivery ${deliveryId} did not reach DELIVERED`);
    },
    async atProvider(reference) {
      const found = (await stack.sim.deliveries()).filter((d) => d.delivery.reference_number === reference);
      return { status: found[0]?.delivery.status ?? 'none', count: found.length };
    },
  };
  orders = await startOrderSystem(side);
}, 600_000);

afterAll(async () => {
  if (process.env.CLUSTER_TEST_OUTPUT) console.log(stack?.group.tail(20_000));
  await orders?.stop();
  await stack?.stop();
}, 120_000);

describe('the Nexus service `deliveries` on the cluster, called from the `orders` namespace', () => {
  orderSystemScenarios(() => ({ side, orders }));
});
