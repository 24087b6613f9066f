/**
 * Checked in a real browser: a Temporal dev server with its Web UI and our codec endpoint, a
 * delivery run to its end with encrypted payloads, and its page opened in headless Chromium
 * (Debian's `chromium`, driven by playwright-core). The summary, the current details and each
 * destination's tracking link must be visible to the operator; a screenshot is kept in
 * test/artifacts/. Skipped, saying so, where no Chromium is installed (`.ci/run` installs it).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { describeIfChromium, launchChromium } from '../helpers/chromium';
import { createCodecServer } from '../../temporal/codec-server';
import { generatePayloadKey, payloadCodecFromEnv } from '../../temporal/payload-codec';
import { ensureServerTools } from '../../scripts/cluster/tools';
import { freePort, startDevServer, type DevServer } from '../../scripts/temporal-dev-server';
import { deliveryRequest } from '../fixtures/orders';
import { deliverToTheEnd, eventually, startStack, type Stack } from '../helpers/stack';

const ARTIFACTS = join(__dirname, '../artifacts');
const describeWithChromium = describeIfChromium('web-ui.test.ts');

describeWithChromium('the delivery in the Temporal Web UI', () => {
  const codec = payloadCodecFromEnv({ DELIVERY_PAYLOAD_KEYS: generatePayloadKey('ui') })!;
  let server: DevServer;
  let codecServer: ReturnType<typeof createCodecServer>;
  let stack: Stack;
  let browser: Browser;

  beforeAll(async () => {
    const uiPort = await freePort();
    const uiOrigin = `http://127.0.0.1:${uiPort}`;
    codecServer = createCodecServer({ codec, allowedOrigin: uiOrigin });
    const codecUrl = await codecServer.listen(0);
    server = await startDevServer({ tools: await ensureServerTools(), uiPort, codecEndpoint: codecUrl });
    stack = await startStack({ dataConverter: { payloadCodecs: [codec] }, temporalAddress: server.address });
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
    await server?.stop();
    await codecServer?.close();
  });

  it('shows the summary, the current details and every tracking link, decrypted', async () => {
    const reference = `UI-${Date.now().toString(36)}`;
    const { reference_number: _r, ...order } = deliveryRequest({ is_food: true }, 2);
    const s = await deliverToTheEnd(stack, reference, order);

    const page = await browser.newPage({ viewport: { width: 1400, height: 1100 } });
    await page.goto(`${server.uiUrl}/namespaces/${server.namespace}/workflows/${encodeURIComponent(`delivery:${reference}`)}`);
    await page.getByText(`delivery:${reference}`).first().waitFor({ timeout: 30_000 });
    // The input, decrypted through the codec endpoint, as the operator sees it.
    await page.getByText(order.destinations[0]!.location.last_name).first().waitFor({ timeout: 30_000 });

    await page.getByText('User Metadata', { exact: true }).first().click();
    // Summary and current details are rendered markdown, each in a frame of its own.
    await eventually('the summary frame', () => (page.frames().some((f) => f.url().includes('/render?')) ? true : undefined));
    const frames = () => page.frames().filter((f) => f.url().includes('/render?'));
    const texts = await eventually('summary and details', async () => {
      const all = await Promise.all(frames().map((f) => f.locator('body').innerText().catch(() => '')));
      const ready = all.some((t) => t.includes(`2 stops · food · ref ${reference}`)) && all.some((t) => t.includes('DELIVERED')) && all.some((t) => t.includes(`pickup ${order.desired_pickup_time}`));
      return ready ? all : undefined;
    });
    expect(texts.join('\n')).toContain(s.deliveryId!);
    const links = (await Promise.all(frames().map((f) => f.locator('a').evaluateAll((as) => as.map((a) => a.getAttribute('href')))))).flat();
    for (const d of s.destinations) expect(links).toContain(d.trackingUrl);

    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'web-ui-delivery.png'), fullPage: true });
    await page.close();
  });
});
