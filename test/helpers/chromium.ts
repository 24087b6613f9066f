/** Headless Chromium for the browser tests (playwright-core against the system's Chromium; CI installs it). */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** `describe` when Chromium is there; otherwise `describe.skip`, saying so once for `file`. */
export function describeIfChromium(file: string): jest.Describe {
  if (existsSync(CHROMIUM)) return describe;
  console.warn(`${file}: browser tests skipped, no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`);
  return describe.skip;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}
