/**
 * Issue #27: an order system in its own namespace (`orders`) has its deliveries made through the
 * Nexus service `deliveries`, on the dev server. Everything real: the delivery workers serving the
 * service, the simulator, signed webhooks and the bridge; the example order workflow
 * (examples/nexus-order-system/) on a worker in `orders`; an endpoint of this file's own.
 */
import { driveToDelivered, startStack, type Stack } from '../helpers/stack';
import { orderSystemScenarios, startOrderSystem, syncOperationScenarios, type DeliverySide, type OrderSystem } from '../helpers/nexus-orders';
import { testServerAddress } from '../helpers/temporal';

let stack: Stack;
let side: DeliverySide;
let orders: OrderSystem;

beforeAll(async () => {
  stack = await startStack();
  side = {
    ...testServerAddress(),
    taskQueue: stack.workers.taskQueue,
    deliveries: stack.deliveries,
    temporal: stack.temporal,
    async driveToDelivered(deliveryId) {
      driveToDelivered(stack.sim, deliveryId);
    },
    async atProvider(reference) {
      const found = stack.sim.deliveries().filter((d) => d.delivery.reference_number === reference);
      return { status: found[0]?.delivery.status ?? 'none', count: found.length };
    },
  };
  orders = await startOrderSystem(side);
}, 120_000);
afterAll(async () => {
  await orders?.stop();
  await stack?.stop();
});

describe('the Nexus service `deliveries`, called from the `orders` namespace', () => {
  orderSystemScenarios(() => ({ side, orders }));
  syncOperationScenarios(() => ({ side, orders }));
});
