import { lineChart, niceTicks, trailingWindowSeries } from '../../bench/charts';
import { drainSeries, limitsCharts, scaleCharts, webhooksCharts } from '../../bench/run-charts';

/** The y pixel of every vertex of the named series' polyline. */
function vertexYs(svg: string, name: string): number[] {
  const m = new RegExp(`data-name="${name}"[^>]*points="([^"]+)"`).exec(svg);
  if (!m) throw new Error(`no series ${name}`);
  return m[1]!.split(' ').map((p) => Number(p.split(',')[1]));
}

describe('benchmark charts', () => {
  it('counts calls in the trailing window, as a rolling-window limit does', () => {
    // Window of 10: calls at 0, 1, 2 and 11 → 3 in the window until 10, then 2, then 1 at 12 …
    const s = trailingWindowSeries('calls', [0, 1, 2, 11], 10);
    const at = (t: number) => [...s.points].reverse().find(([x]) => x <= t)![1];
    expect([at(0), at(2), at(9.9), at(10), at(11), at(12), at(21)]).toEqual([1, 3, 3, 2, 2, 1, 0]);
    expect(Math.max(...s.points.map((p) => p[1]))).toBe(3);
  });

  it('draws the limit line at the height of the samples that reach the limit', () => {
    const svg = lineChart({
      title: 'creations in the trailing 60 s',
      xLabel: 's',
      yLabel: 'calls',
      series: [
        { name: 'paced', points: [[0, 0], [5, 20], [10, 12]] },
        { name: 'naive', points: [[0, 0], [5, 35], [10, 20]] },
      ],
      references: [{ y: 20, label: 'limit 20 / 60 s' }],
    });
    expect(svg.startsWith('<svg')).toBe(true);
    const limitY = Number(/class="reference" data-y="20"[^>]*y1="([\d.]+)"/.exec(svg)![1]);
    expect(vertexYs(svg, 'paced')[1]).toBe(limitY); // the paced series touches the limit …
    expect(vertexYs(svg, 'naive')[1]).toBeLessThan(limitY); // … the naive one goes above it (SVG y grows downwards)
    expect(vertexYs(svg, 'paced')[0]).toBeGreaterThan(limitY);
    expect(svg).toContain('limit 20 / 60 s');
  });

  it('escapes text and keeps ticks round', () => {
    expect(lineChart({ title: 'a <b> & "c"', xLabel: 'x', yLabel: 'y', series: [] })).toContain('a &lt;b&gt; &amp; &quot;c&quot;');
    expect(niceTicks(0, 138)).toEqual([0, 50, 100, 150]);
    expect(niceTicks(0, 1)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
  });

  it('draws the limits benchmark from its samples: both families against their limits, and the drain against the least possible', () => {
    const t0 = 1_000_000;
    const sample = { label: 'pacing gate', t0, quotes: [t0 + 100, t0 + 200], creations: [t0 + 300, t0 + 6_400], createdAt: [t0 + 300, t0 + 6_400] };
    const charts = limitsCharts([sample], { quotes: { limit: 100, windowMs: 60_000 }, creations: { limit: 20, windowMs: 6_000 } }, 2, [0, 6_000]);
    expect(Object.keys(charts).sort()).toEqual(['creations', 'drain', 'quotes']);
    expect(charts.creations).toContain('provider limit: 20 per 6 s');
    expect(charts.quotes).toContain('provider limit: 100 per 60 s');
    expect(charts.drain).toContain('data-name="least possible"');
    expect(drainSeries('x', 2, [6.4, 0.3]).points).toEqual([[0, 2], [0.3, 1], [6.4, 0]]);
  });

  it('draws the webhooks benchmark from its samples: p50/p90/p99 of the bridge beside raw signals, bar heights as the values', () => {
    const oneTo100 = Array.from({ length: 100 }, (_, i) => 100 - i); // unsorted on purpose
    const { ack } = webhooksCharts([
      { label: 'bridge at 200/s', latencies: oneTo100 },
      { label: 'raw signals at 200/s', latencies: oneTo100.map((ms) => ms / 2) },
    ]);
    const bar = (series: string, group: string) => {
      const m = new RegExp(`class="bar" data-series="${series} \\(100\\)" data-group="${group}" data-value="([\\d.]+)" x="[\\d.]+" y="([\\d.]+)" width="[\\d.]+" height="([\\d.]+)"`).exec(ack!);
      if (!m) throw new Error(`no bar ${series} ${group}`);
      return { value: Number(m[1]), height: Number(m[3]) };
    };
    // The 100 samples 1..100 ms: the p-th percentile by nearest rank is the (100 p)-th sample.
    expect([bar('bridge at 200/s', 'p50'), bar('bridge at 200/s', 'p90'), bar('bridge at 200/s', 'p99')].map((b) => b.value)).toEqual([50, 90, 99]);
    expect(bar('raw signals at 200/s', 'p99').value).toBe(49.5);
    expect(bar('bridge at 200/s', 'p99').height).toBeCloseTo(2 * bar('raw signals at 200/s', 'p99').height, 0);
    expect(ack).toContain('acknowledgement latency');
  });

  it('draws the scale benchmark from its samples: worker memory and status latency over the run', () => {
    const charts = scaleCharts(
      [
        { name: 'cache 500, heap 512 MiB', points: [[0, 90], [1, 250], [2, 400]] },
        { name: 'cache 100, heap 384 MiB', points: [[100, 95], [101, 180]] },
      ],
      [{ name: 'cache 500, heap 512 MiB, random', points: [[50, 12], [51, 30], [52, 9]] }],
    );
    expect(Object.keys(charts).sort()).toEqual(['rss', 'status-latency']);
    const rss = vertexYs(charts.rss!, 'cache 500, heap 512 MiB');
    expect(rss).toHaveLength(3);
    expect(rss[2]).toBeLessThan(rss[1]!); // memory grows: higher on the chart
    expect(charts.rss).toContain('data-name="cache 100, heap 384 MiB"');
    const latency = vertexYs(charts['status-latency']!, 'cache 500, heap 512 MiB, random');
    expect(latency[1]).toBeLessThan(latency[0]!); // 30 ms is higher than 12 ms …
    expect(latency[2]).toBeGreaterThan(latency[0]!); // … and 9 ms lower
  });
});
