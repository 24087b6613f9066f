/**
 * Sends items together: a lone item goes at once, and the items that come while one batch is on
 * its way go as the next batch when it has been answered (no timer, so no added wait). Each
 * caller learns its own batch's outcome, and retries as its activity's policy says.
 *
 * Why (docs/benchmarks.md, "On the Temporal cluster"): every order asks the one pacing gate
 * workflow, and the history service takes one workflow's messages one at a time: while 300
 * orders start, 300 signals queue behind each other and the gate's own tasks, and the asks reach
 * it over seconds. Batched per worker process, the same asks are a few dozen signals.
 */
export function batchedSends<T>(send: (items: T[]) => Promise<void>, maxBatch: number): (item: T) => Promise<void> {
  const queued: { item: T; resolve: () => void; reject: (err: unknown) => void }[] = [];
  let sending = false;
  const next = (): void => {
    if (sending || queued.length === 0) return;
    sending = true;
    const batch = queued.splice(0, maxBatch);
    // A send that throws synchronously fails its batch like one that rejects.
    Promise.resolve()
      .then(() => send(batch.map((b) => b.item)))
      .then(
        () => batch.forEach((b) => b.resolve()),
        (err: unknown) => batch.forEach((b) => b.reject(err)),
      )
      .finally(() => {
        sending = false;
        next();
      });
  };
  return (item) =>
    new Promise<void>((resolve, reject) => {
      queued.push({ item, resolve, reject });
      next();
    });
}
