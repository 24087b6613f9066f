/**
 * Sends items together: a lone item goes at once (or after `lingerMs`, gathering the items that
 * come meanwhile), and the items that come while one batch is on its way go as the next batch when
 * it has been answered, without waiting more. Each caller learns its own batch's outcome, and
 * retries as its activity's policy says.
 *
 * Why (docs/benchmarks.md, "On the Temporal cluster"): every order asks the one pacing gate
 * workflow, and the history service takes one workflow's messages one at a time: while 300
 * orders start, 300 signals queue behind each other and the gate's own tasks, and the asks reach
 * it over seconds. Batched per worker process, the same asks are a few dozen signals.
 */
export interface BatchLimits<T> {
  items: number;
  /** Bytes per batch as `sizeOf` counts them; an item larger than this goes alone. */
  bytes: number;
  sizeOf: (item: T) => number;
  /** How long an item that finds the sender idle waits for others (a full batch goes at once); 0 or left out: none. */
  lingerMs?: number;
}

export function batchedSends<T>(send: (items: T[]) => Promise<void>, limits: BatchLimits<T>): (item: T) => Promise<void> {
  const queued: { item: T; size: number; resolve: () => void; reject: (err: unknown) => void }[] = [];
  let sending = false;
  let lingering: ReturnType<typeof setTimeout> | undefined;
  const next = (): void => {
    if (sending || queued.length === 0) return;
    if (lingering !== undefined) {
      if (queued.length < limits.items) return;
      clearTimeout(lingering);
      lingering = undefined;
    }
    sending = true;
    let count = 1;
    for (let bytes = queued[0]!.size; count < Math.min(queued.length, limits.items) && bytes + queued[count]!.size <= limits.bytes; count++) bytes += queued[count]!.size;
    const batch = queued.splice(0, count);
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
      const idle = !sending && queued.length === 0;
      queued.push({ item, size: limits.sizeOf(item), resolve, reject });
      if (idle && (limits.lingerMs ?? 0) > 0) {
        lingering = setTimeout(() => {
          lingering = undefined;
          next();
        }, limits.lingerMs);
      }
      next();
    });
}
