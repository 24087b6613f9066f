/** The most calls inside any rolling window of `windowMs`, as a courier counts them: arrivals less than a window apart. */
export function busiestWindow(times: readonly number[], windowMs: number): number {
  const t = [...times].sort((x, y) => x - y);
  let best = 0;
  for (let i = 0, j = 0; j < t.length; j++) {
    while (t[j]! - t[i]! >= windowMs) i++;
    best = Math.max(best, j - i + 1);
  }
  return best;
}
