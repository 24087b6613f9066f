/**
 * The CLI's own option checks, made before anything connects (no Temporal here: a connection
 * attempt would show as exit 5, "unavailable").
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { EXIT, main } from '../../client/cli';

async function cli(argv: string[]) {
  const [stdout, stderr] = [new PassThrough(), new PassThrough()];
  const err: string[] = [];
  stderr.on('data', (c: Buffer) => err.push(c.toString()));
  const code = await main(argv, { stdout: stdout as never, stderr: stderr as never, stdin: process.stdin });
  return { code, stderr: err.join('') };
}

describe('delivery create --check-timeout', () => {
  it.each(['0', '-1', 'soon'])('refuses %s as bad usage (exit 2) naming the option, before connecting', async (value) => {
    const r = await cli(['create', '--reference', 'R-1', '--order', 'order.json', '--check-timeout', value]);
    expect(r.code).toBe(EXIT.usage);
    expect(r.stderr).toContain('--check-timeout');
  });
});

describe('delivery check-key with a registry the worker would refuse', () => {
  const saved = process.env.DELIVERY_ACCOUNTS_FILE;
  afterEach(() => (saved === undefined ? delete process.env.DELIVERY_ACCOUNTS_FILE : (process.env.DELIVERY_ACCOUNTS_FILE = saved)));

  it('exits 2 naming DELIVERY_ACCOUNTS_FILE and the reason, not 1 (an unexpected error)', async () => {
    process.env.DELIVERY_ACCOUNTS_FILE = '/nonexistent/accounts.json';
    const r = await cli(['check-key', '--account', 'shop-a']);
    expect(r.code).toBe(EXIT.usage);
    expect(r.stderr).toMatch(/DELIVERY_ACCOUNTS_FILE: invalid account registry: cannot read DELIVERY_ACCOUNTS_FILE \/nonexistent\/accounts\.json \(ENOENT\)/);
  });
});

describe('delivery with its output closed early (`| head`)', () => {
  it('ends with exit 0 and no stack trace', async () => {
    const child = spawn(process.execPath, [join(__dirname, '../../client/delivery.js'), '--help'], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy(); // the reader is gone before the CLI (loading for a second or more) writes
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  }, 60_000);
});
