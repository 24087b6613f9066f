/**
 * The /_sim dashboard as its users meet it: GET /_sim/overview shows each key's rolling windows
 * (by label and fingerprint, never the key), answers only its own Host and Origin; and, in
 * headless Chromium (Debian's `chromium`, driven by playwright-core), a click on "advance" moves
 * a delivery on, its new status and its webhook appear on the page, and the faults form sets
 * faults. Skipped, saying so, where no Chromium is installed (`.ci/run` installs it).
 * DOCS_SCREENSHOT=1 also refreshes docs/images/sim-dashboard.png from the test's screenshot.
 */
import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { describeIfChromium, launchChromium } from '../helpers/chromium';
import { generateWebhookSecret } from '../../provider/webhook-signature';
import type { DashboardView } from '../../simulator/dashboard';
import { rawRequest } from '../helpers/http';
import { call, createBody, destination, startReceiver, startSimulator, type Receiver, type Started } from './simulator-fixtures';

const SECOND_KEY = 'second-key-f00d-7c1e';
const secret = generateWebhookSecret();

describe('GET /_sim/overview', () => {
  let s: Started;
  let t = Date.now();
  beforeAll(async () => {
    s = await startSimulator({ apiKeys: [SECOND_KEY], timeScale: 60, clock: () => t, webhook: { url: 'http://127.0.0.1:9/hooks', secret } });
  });
  afterAll(async () => {
    await s.sim.close();
    expect(s.errors).toEqual([]);
  });

  const overview = async () => {
    const a = await call(s.url, 'GET', '/_sim/overview', { key: null });
    expect(a.status).toBe(200);
    return { view: a.json as DashboardView, text: a.text };
  };

  test('shows each key\'s calls in its current window, scaled, and empties as the window rolls on', async () => {
    for (let i = 0; i < 3; i++) expect((await call(s.url, 'POST', '/v1/deliveries', { body: createBody() })).status).toBe(201);
    for (let i = 0; i < 2; i++) expect((await call(s.url, 'POST', '/v1/quotes', { body: createBody(), key: SECOND_KEY })).status).toBe(200);
    const { view } = await overview();
    expect(view.keys.map((k) => k.label)).toEqual(['default key', 'key 2']);
    const [first, second] = view.keys;
    expect(first!.fingerprint).toMatch(/^[0-9a-f]{12}$/);
    expect(first!.gauges.find((g) => g.family === 'creations')).toEqual({
      family: 'creations',
      used: 3,
      limit: 20,
      // 60 s of provider time is 1 s of real time at scale 60.
      text: '3 / 20 creations in the last 60 s (1 s real); a slot frees in 1 s',
    });
    expect(second!.gauges.find((g) => g.family === 'quotes')).toMatchObject({ used: 2, limit: 100, text: expect.stringContaining('2 / 100 quotes in the last 600 s (10 s real)') });
    expect(second!.gauges.find((g) => g.family === 'creations')).toMatchObject({ used: 0 });
    expect(view.deliveries).toHaveLength(3);
    expect(view.deliveries[0]).toMatchObject({ status: 'CREATED', can_advance: true, key_fingerprint: first!.fingerprint });

    t += 1_001; // one real second: the creation window has rolled past all three; the quote window has not
    const later = (await overview()).view;
    expect(later.keys[0]!.gauges.find((g) => g.family === 'creations')).toMatchObject({ used: 0, text: '0 / 20 creations in the last 60 s (1 s real)' });
    expect(later.keys[1]!.gauges.find((g) => g.family === 'quotes')).toMatchObject({ used: 2 });
  });

  test('holds no key and no webhook secret, neither does the page, which sends a strict CSP', async () => {
    const { text } = await overview();
    const page = await rawRequest(s.url + '/_sim');
    for (const body of [text, page.text]) {
      expect(body).not.toContain(SECOND_KEY);
      expect(body).not.toContain('sandbox-key');
      expect(body).not.toContain(secret.slice(6, 20));
    }
    expect(page.headers['content-security-policy']).toMatch(/script-src 'sha256-[^']+'; .*connect-src 'self'/);
    expect(page.text).toContain('0 / 20 creations in the last 60 s');
  });

  test('answers only its own Host and Origin; the writes the page sends need JSON', async () => {
    const port = new URL(s.url).port;
    const host = await rawRequest(s.url + '/_sim/overview', { headers: { host: `evil.example:${port}` } });
    expect(host.status).toBe(403);
    expect(host.text).not.toContain('creations');
    for (const origin of ['http://evil.example', 'null']) {
      const a = await rawRequest(s.url + '/_sim/overview', { headers: { origin } });
      expect(a.status).toBe(403);
      expect(JSON.parse(a.text)).toMatchObject({ error: { code: 'origin_not_allowed' } });
    }
    expect((await rawRequest(s.url + '/_sim/overview', { headers: { origin: s.url } })).status).toBe(200);
    const id = (await overview()).view.deliveries[0]!.id;
    for (const path of [`/_sim/deliveries/${id}/advance`, '/_sim/faults']) {
      const form = await rawRequest(s.url + path, { method: 'POST', headers: { origin: s.url, 'content-type': 'application/x-www-form-urlencoded' }, body: 'error_rate=1' });
      expect(form.status).toBe(415);
    }
    expect(s.sim.faults.error_rate).toBe(0);
    expect((await overview()).view.deliveries[0]!.status).toBe('CREATED');
  });
});

const describeWithChromium = describeIfChromium('simulator-dashboard.test.ts');

describeWithChromium('the /_sim dashboard in headless Chromium', () => {
  let s: Started;
  let rx: Receiver;
  let browser: Browser;
  beforeAll(async () => {
    s = await startSimulator();
    rx = await startReceiver();
    s.sim.setWebhookEndpoint({ url: rx.url, secret });
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await s?.sim.close();
    await rx?.close();
    expect(s.errors).toEqual([]);
  });

  test('a click on "advance" moves a delivery on; its status and its webhook show; the faults form sets faults', async () => {
    const created = await call(s.url, 'POST', '/v1/deliveries', { body: createBody({ reference_number: 'DASH-1', destinations: [destination(), destination()] }) });
    expect(created.status).toBe(201);
    const { id, destinations } = created.json as { id: string; destinations: { id: string }[] };

    const page = await browser.newPage({ viewport: { width: 1500, height: 900 } });
    const consoleErrors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    await page.goto(`${s.url}/_sim`);
    await page.getByText('live, updated').waitFor(); // the script ran: the CSP let it, and /_sim/overview answered
    await page.getByText('1 / 20 creations in the last 60 s').waitFor();

    const row = page.locator(`tr[data-delivery="${id}"]`);
    await row.locator('td.status button').click();
    await row.locator('td.status', { hasText: 'ASSIGNED' }).waitFor();
    await page.getByText(`${id} is now ASSIGNED`).waitFor();
    const hook = page.locator('#webhooks tr', { hasText: id });
    await hook.filter({ hasText: 'delivery.status_changed' }).filter({ hasText: 'delivered (attempt 1 of 7)' }).waitFor();
    expect(JSON.parse((await rx.waitFor(1))[0]!.body)).toMatchObject({ type: 'delivery.status_changed', data: { delivery_id: id, status: 'ASSIGNED' } });

    // One destination on its own.
    await row.locator(`button[data-destination="${destinations[1]!.id}"]`).click();
    await row.getByText('IN_TRANSIT').waitFor();
    await hook.filter({ hasText: 'destination.status_changed' }).filter({ hasText: 'delivered (attempt 1 of 7)' }).waitFor();
    expect(s.sim.deliveries()[0]!.delivery.destinations.map((d) => d.status)).toEqual(['PENDING', 'IN_TRANSIT']);

    expect(consoleErrors).toEqual([]); // no CSP violation, no failed request so far

    // A value the browser lets through but the simulator refuses: its message shows, nothing changes.
    await page.locator('input[name="reference_faults"]').fill('{"POISON-1": 404}');
    await page.getByRole('button', { name: 'apply faults' }).click();
    await page.getByText('faults not set: the request is not valid: reference_faults').waitFor();
    expect(s.sim.faults.reference_faults).toEqual({});
    await page.locator('input[name="error_rate"]').fill('0.25');
    await page.locator('input[name="reference_faults"]').fill('{"POISON-1": 422}');
    await page.getByRole('button', { name: 'apply faults' }).click();
    await page.getByText('faults set:').waitFor();
    expect(s.sim.faults).toMatchObject({ error_rate: 0.25, reference_faults: { 'POISON-1': 422 } });

    const screenshot = join(mkdtempSync(join(tmpdir(), 'sim-dashboard-')), 'sim-dashboard.png');
    await page.screenshot({ path: screenshot, fullPage: true });
    console.log(`dashboard screenshot: ${screenshot}`);
    if (process.env.DOCS_SCREENSHOT === '1') copyFileSync(screenshot, join(__dirname, '../../docs/images/sim-dashboard.png'));
    await page.close();
  });
});
