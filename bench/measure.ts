/** What the benchmarks share to load and measure: settings, progress lines, percentiles, the load loops, /proc readings. */
import { readFileSync } from 'node:fs';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A benchmark's counts and settings from `<PREFIX>_BENCH_<NAME>` (e.g. SCALE_BENCH_DELIVERIES), each at least `least`. */
export function benchSettings(prefix: string, least = 0) {
  const num = (name: string, fallback: number): number => {
    const key = `${prefix}_BENCH_${name}`;
    const text = process.env[key];
    if (text === undefined || text === '') return fallback;
    const value = Number(text);
    if (!Number.isFinite(value) || value < least) throw new Error(`${key} must be a number of at least ${least}, not "${text}"`);
    return value;
  };
  return { num };
}

/** Progress lines on stderr, `[name 42s] ...` with the seconds since the benchmark began. */
export function progressLog(name: string): (line: string) => void {
  const t0 = Date.now();
  return (line) => process.stderr.write(`[${name} ${Math.round((Date.now() - t0) / 1000)}s] ${line}\n`);
}

/** Runs `run`, printing `line()` every 5 s meanwhile: long waits show progress. */
export async function ticking<T>(progress: (line: string) => void, line: () => string, run: () => Promise<T>): Promise<T> {
  const timer = setInterval(() => progress(line()), 5_000);
  try {
    return await run();
  } finally {
    clearInterval(timer);
  }
}

/** Asks `check` every `everyMs` until it answers (anything but undefined or false); fails, saying `what`, after `timeoutMs`. */
export async function waitFor<T>(what: string, timeoutMs: number, everyMs: number, check: () => Promise<T | undefined | false>): Promise<T> {
  for (const deadline = Date.now() + timeoutMs; ; await sleep(everyMs)) {
    const answer = await check();
    if (answer !== undefined && answer !== false) return answer;
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs / 1000} s: ${what}`);
  }
}

/** The same figures with `<prefix>_` before each name. */
export const prefixed = <V>(prefix: string, o: Record<string, V>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [`${prefix}_${k}`, v]));

/** The steps that undo a benchmark's setup, run last-added first, each failure reported and passed over. */
export class Cleanup {
  private readonly steps: (() => unknown)[] = [];
  add(step: () => unknown): void {
    this.steps.unshift(step);
  }
  async run(progress: (line: string) => void): Promise<void> {
    for (const step of this.steps.splice(0)) await Promise.resolve().then(step).catch((e: Error) => progress(`cleanup: ${e.message}`));
  }
}

export function shuffled<T>(xs: readonly T[]): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** What a benchmark returns to bench/main.ts: its figures, or its figures and SVG charts drawn from its samples (bench/charts.ts). */
export type BenchmarkOutput = Record<string, number | string> | { figures: Record<string, number | string>; charts: Record<string, string> };

/** The `p` percentile (0.5, 0.99) by nearest rank, sorted[ceil(p × n) − 1]: p99 of 100 values is the 99th, not the maximum. */
export function percentile(sorted: readonly number[], p: number, digits = 2): number {
  if (!(p > 0 && p <= 1)) throw new Error(`a percentile is a fraction in (0, 1], not ${p}`);
  if (sorted.length === 0) return NaN;
  return Number(sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)]!.toFixed(digits));
}

/** The middle value (the mean of the two middle ones for an even count); NaN for none. */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** `<name>_p50_ms` and `<name>_p99_ms` of these latencies (NaN for none), as the result files name them. */
export function p50p99(name: string, ms: readonly number[], digits = 2): Record<string, number> {
  const sorted = [...ms].sort((a, b) => a - b);
  return { [`${name}_p50_ms`]: percentile(sorted, 0.5, digits), [`${name}_p99_ms`]: percentile(sorted, 0.99, digits) };
}

/** Runs `one` over the items (and their index) with `concurrency` callers; answers items per second. */
export async function pool<T>(items: T[], concurrency: number, one: (item: T, index: number) => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  const caller = async () => {
    for (let i = next++; i < items.length; i = next++) await one(items[i]!, i);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, caller));
  return items.length / ((performance.now() - started) / 1000);
}

/** Open loop: item i is sent at started + i/perSecond whatever came before, its latency counted from then: any queueing shows. */
export async function openLoop<T>(items: T[], perSecond: number, send: (item: T) => Promise<void>): Promise<number[]> {
  const latencies: number[] = [];
  const inFlight: Promise<void>[] = [];
  const started = performance.now();
  for (let i = 0; i < items.length; ) {
    const now = performance.now();
    while (i < items.length && started + (i * 1000) / perSecond <= now) {
      const scheduled = started + (i * 1000) / perSecond;
      const sent = send(items[i]!).then(() => void latencies.push(performance.now() - scheduled));
      sent.catch(() => undefined); // reported by Promise.all below, once every send is out
      inFlight.push(sent);
      i++;
    }
    await sleep(1);
  }
  await Promise.all(inFlight);
  return latencies;
}

/** One at a time, no load: the latency of each call on its own (ms). */
export async function serial<T>(items: T[], send: (item: T) => Promise<void>): Promise<number[]> {
  const latencies: number[] = [];
  for (const item of items) {
    const t0 = performance.now();
    await send(item);
    latencies.push(performance.now() - t0);
  }
  return latencies;
}

const TICKS_PER_SECOND = 100; // USER_HZ, 100 on every Linux this runs on

/** A file of /proc; undefined when it is gone (its process ended) or not Linux. */
function readProc(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** A process's /proc/<pid>/stat fields after its name (its state first, then its parent); undefined when it is gone or not Linux. */
export function procStat(pid: number | undefined): string[] | undefined {
  const stat = pid === undefined ? undefined : readProc(`/proc/${pid}/stat`);
  return stat?.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** CPU seconds (user + system, all threads) a process has used so far, from /proc; undefined when it is gone or not Linux. */
export function processCpuSeconds(pid: number | undefined): number | undefined {
  const fields = procStat(pid);
  return fields && (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/** A process's resident memory now (VmRSS) and at its peak (VmHWM), in MiB, from /proc; undefined when it is gone. */
export function processMemoryMiB(pid: number | undefined): { rss: number; peak: number } | undefined {
  const status = pid === undefined ? undefined : readProc(`/proc/${pid}/status`);
  const mib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status!)?.[1] ?? NaN) / 1024;
  return status === undefined ? undefined : { rss: mib('VmRSS'), peak: mib('VmHWM') };
}

/** The machine's CPU seconds so far, busy and in all, summed over its cores, from /proc/stat. */
export function machineCpuSeconds(): { busy: number; total: number } | undefined {
  const t = readProc('/proc/stat')?.split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  if (!t) return undefined;
  const total = t.slice(0, 8).reduce((a, b) => a + b, 0);
  const idle = (t[3] ?? 0) + (t[4] ?? 0);
  return { busy: (total - idle) / TICKS_PER_SECOND, total: total / TICKS_PER_SECOND };
}

/**
 * CPU seconds of each named process over the spans measured (`span(run)`, or `begin()` to the function it returns, which
 * answers `cpu_pct_<name>`, % of one core), beside what other processes used of the shared cores (`otherPct`).
 */
export function cpuMeter<K extends string>(pids: Record<K, number | undefined>) {
  const names = Object.keys(pids) as K[];
  const read = () => {
    const machine = machineCpuSeconds() ?? { busy: 0, total: 0 };
    return { ...(Object.fromEntries(names.map((k) => [k, processCpuSeconds(pids[k]) ?? 0])) as Record<K, number>), busy: machine.busy, total: machine.total, wall: performance.now() / 1000 };
  };
  const seconds = Object.fromEntries([...names, 'busy', 'total', 'wall'].map((k) => [k, 0])) as Record<K | 'busy' | 'total' | 'wall', number>;
  const ours = () => names.reduce((sum, k) => sum + seconds[k], 0);
  /** Busy time of the machine not spent by any of these processes, % of all its cores. */
  const otherPct = () => Math.round((100 * Math.max(0, seconds.busy - ours())) / (seconds.total || 1));
  const pct = (k: K) => Number(((100 * seconds[k]) / (seconds.wall || 1)).toFixed(1));
  const begin = () => {
    const before = read();
    return () => {
      const after = read();
      for (const k of Object.keys(seconds) as (keyof typeof seconds)[]) seconds[k] += after[k] - before[k];
      return { ...Object.fromEntries(names.map((k) => [`cpu_pct_${k}`, pct(k)])), other_processes_cpu_pct: otherPct() } as Record<`cpu_pct_${K}` | 'other_processes_cpu_pct', number>;
    };
  };
  return {
    seconds,
    ours,
    otherPct,
    begin,
    async span<T>(run: () => Promise<T>): Promise<T> {
      const end = begin();
      try {
        return await run();
      } finally {
        end();
      }
    },
  };
}
