/** The largest number of calls in any rolling window of `windowMs`: what a courier counting that window saw at its busiest. */
export function busiestWindow(times: number[], windowMs: number): number {
  const t = [...times].sort((x, y) => x - y);
  let best = 0;
  for (let i = 0, j = 0; j < t.length; j++) {
    while (t[j]! - t[i]! >= windowMs) i++;
    best = Math.max(best, j - i + 1);
  }
  return best;
}
