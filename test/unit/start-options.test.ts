/**
 * `default` is just an account (issue 53): every delivery, `default`'s too, carries DeliveryAccount
 * from its start and names its account in the Web UI summary; only its workflow ID keeps 0.2.0's form.
 */
import { DeliveryAccount } from '../../contract/search-attributes';
import { deliveryStartOptions } from '../../workflows/start-options';
import { deliveryOrder } from '../fixtures/orders';

function input(account?: string) {
  return { reference: 'A-1042', order: deliveryOrder({ is_food: true }), ...(account !== undefined && { account }) };
}

describe('how a delivery is started', () => {
  it.each([
    [undefined, 'default', 'delivery:A-1042'],
    ['default', 'default', 'delivery:A-1042'],
    ['shop-7', 'shop-7', 'delivery@shop-7:A-1042'],
  ])('account %s: DeliveryAccount %s from the start, the summary names it, ID %s', (given, account, workflowId) => {
    const o = deliveryStartOptions(input(given));
    expect(o.workflowId).toBe(workflowId);
    expect(o.typedSearchAttributes.get(DeliveryAccount)).toBe(account);
    expect(o.staticSummary).toMatch(new RegExp(` · account ${account}$`));
  });
});
