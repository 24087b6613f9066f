/** The gate's asks from one worker process go together: none is lost, a failure reaches only its own batch, and only an ask that finds the sender idle waits (lingerMs). */
import { batchedSends } from '../../activities/batched-sends';

const byCount = (items: number) => ({ items, bytes: Infinity, sizeOf: (s: string) => s.length });

/** A send the test answers by hand, recording every batch it was given. */
function manualSend() {
  const batches: string[][] = [];
  const answers: { resolve: () => void; reject: (err: Error) => void }[] = [];
  const send = (items: string[]) => {
    batches.push(items);
    return new Promise<void>((resolve, reject) => answers.push({ resolve, reject }));
  };
  return { send, batches, answer: (i: number) => answers[i]!, settled: () => new Promise((r) => setImmediate(r)) };
}

it('sends a lone item at once, and the items that came meanwhile together when that send is answered', async () => {
  const m = manualSend();
  const ask = batchedSends(m.send, byCount(50));
  const first = ask('a');
  await m.settled();
  expect(m.batches).toEqual([['a']]);
  const rest = ['b', 'c', 'd'].map(ask);
  await m.settled();
  expect(m.batches).toEqual([['a']]); // one send at a time
  m.answer(0).resolve();
  await first;
  await m.settled();
  expect(m.batches).toEqual([['a'], ['b', 'c', 'd']]);
  m.answer(1).resolve();
  await expect(Promise.all(rest)).resolves.toEqual([undefined, undefined, undefined]);
});

it('a failed send rejects its own batch only, and the next batch still goes', async () => {
  const m = manualSend();
  const ask = batchedSends(m.send, byCount(50));
  const a = ask('a');
  await m.settled();
  const b = ask('b');
  m.answer(0).reject(new Error('frontend unavailable'));
  await expect(a).rejects.toThrow('frontend unavailable');
  await m.settled();
  expect(m.batches).toEqual([['a'], ['b']]);
  m.answer(1).resolve();
  await expect(b).resolves.toBeUndefined();
});

it('a send that throws before returning a promise fails its batch instead of the caller stalling', async () => {
  const ask = batchedSends<string>(() => {
    throw new Error('bad payload');
  }, byCount(50));
  await expect(ask('a')).rejects.toThrow('bad payload');
  await expect(ask('b')).rejects.toThrow('bad payload'); // and the sender is free again
});

it('keeps each batch within its size, in the order the items came', async () => {
  const m = manualSend();
  const ask = batchedSends(m.send, byCount(2));
  const all = ['a', 'b', 'c', 'd', 'e'].map(ask);
  for (let i = 0; i < 3; i++) {
    await m.settled();
    m.answer(i).resolve();
  }
  await Promise.all(all);
  expect(m.batches).toEqual([['a'], ['b', 'c'], ['d', 'e']]);
});

it('keeps each batch within its bytes, and sends an item larger than that alone', async () => {
  const m = manualSend();
  const ask = batchedSends(m.send, { items: 50, bytes: 10, sizeOf: (s: string) => s.length });
  const all = ['a', 'bbbb', 'cccc', 'dd', 'e'.repeat(12), 'f'].map(ask);
  for (let i = 0; i < 4; i++) {
    await m.settled();
    m.answer(i).resolve();
  }
  await Promise.all(all);
  expect(m.batches).toEqual([['a'], ['bbbb', 'cccc', 'dd'], ['e'.repeat(12)], ['f']]);
});

it('with lingerMs, gathers the items that come while the first one waits, and sends a full batch at once', async () => {
  jest.useFakeTimers();
  try {
    const batches: string[][] = [];
    const ask = batchedSends((items: string[]) => (batches.push(items), Promise.resolve()), { ...byCount(3), lingerMs: 50 });
    const first = ['a', 'b'].map(ask);
    await jest.advanceTimersByTimeAsync(49);
    expect(batches).toEqual([]);
    await jest.advanceTimersByTimeAsync(1);
    await Promise.all(first);
    expect(batches).toEqual([['a', 'b']]);
    const full = ['c', 'd', 'e'].map(ask); // a full batch does not wait
    await jest.advanceTimersByTimeAsync(0);
    await Promise.all(full);
    expect(batches).toEqual([['a', 'b'], ['c', 'd', 'e']]);
  } finally {
    jest.useRealTimers();
  }
});
