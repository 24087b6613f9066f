/**
 * A delivery's search-attribute upserts go out in program order, each at the end of the change
 * that made it: never deferred past the commands that follow it (a deferred upsert changed places
 * with a cancellation's activity when a replay handed two jobs over in one activation that the
 * run had handled apart, and that history could not be replayed).
 */
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { defineSearchAttributeKey } from '@temporalio/common';
import { UpsertBatches } from '../../workflows/search-attributes';

const Status = defineSearchAttributeKey('DeliveryStatus', 'KEYWORD');
const Id = defineSearchAttributeKey('DeliveryId', 'KEYWORD');
const Price = defineSearchAttributeKey('QuotedPrice', 'INT');

function recorder() {
  const commands: string[] = [];
  const batches = new UpsertBatches((pairs: SearchAttributeUpdatePair[]) => commands.push(`upsert ${pairs.map((p) => `${p.key.name}=${String(p.value)}`).join(' ')}`));
  return { commands, batches };
}

describe('search-attribute upserts', () => {
  it('go out when their change ends, all its pairs in one upsert, before the command that follows', () => {
    const { commands, batches } = recorder();
    batches.change(() => {
      batches.set({ key: Status, value: 'CREATED' });
      batches.set({ key: Id, value: 'del_1' });
      batches.change(() => batches.set({ key: Price, value: 1250 })); // nested: part of the outer change
      expect(commands).toEqual([]);
    });
    commands.push('schedule activity cancelDelivery');
    expect(commands).toEqual(['upsert DeliveryStatus=CREATED DeliveryId=del_1 QuotedPrice=1250', 'schedule activity cancelDelivery']);
  });

  it('keep the last value of a key set twice in one change', () => {
    const { commands, batches } = recorder();
    batches.change(() => {
      batches.set({ key: Status, value: 'CREATED' });
      batches.set({ key: Status, value: 'ASSIGNED' });
    });
    expect(commands).toEqual(['upsert DeliveryStatus=ASSIGNED']);
  });

  it('go out at once outside a change, and a change that sets nothing upserts nothing', () => {
    const { commands, batches } = recorder();
    batches.set({ key: Status, value: 'PICKED_UP' });
    batches.change(() => undefined);
    commands.push('start timer');
    expect(commands).toEqual(['upsert DeliveryStatus=PICKED_UP', 'start timer']);
  });

  it('go out even when the change throws', () => {
    const { commands, batches } = recorder();
    expect(() =>
      batches.change(() => {
        batches.set({ key: Status, value: 'CANCELED' });
        throw new Error('cancelled');
      }),
    ).toThrow('cancelled');
    expect(commands).toEqual(['upsert DeliveryStatus=CANCELED']);
  });
});
