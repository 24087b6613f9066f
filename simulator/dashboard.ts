/**
 * HTML pages: the /_sim dashboard (rate windows per key, deliveries, destinations, webhook state,
 * like the provider's own dashboard, plus buttons and a faults form to drive the simulator) and
 * the public /track/{destination_id} page. Every value is escaped; the tracking page shows only
 * the status and the time window, no personal data.
 *
 * The dashboard is rendered once here (so it reads without JavaScript) and then kept live by
 * dashboard-script.ts from GET /_sim/overview, the same view as JSON. Keys appear only as a label
 * and their fingerprint. The page's Content-Security-Policy allows exactly its own inline script
 * and style (by hash) and same-origin fetches, nothing else.
 */
import { createHash } from 'node:crypto';
import { isKnownDeliveryStatus, isTerminalDelivery, isTerminalDestination } from '../provider/lifecycle';
import type { CallFamily } from '../provider/limits';
import { formatMoney } from '../provider/money';
import type { SimContext } from './context';
import { DASHBOARD_SCRIPT } from './dashboard-script';
import { escapeHtml as e } from './http-util';
import { WEBHOOK_MAX_ATTEMPTS, type WebhookDispatch } from './webhooks';

const SHOWN = 200;
const FAMILIES: readonly CallFamily[] = ['creations', 'quotes', 'other'];
const STYLE = `body{font:14px system-ui,sans-serif;margin:1.5rem;color:#222}table{border-collapse:collapse;margin:.5rem 0 1.5rem}
td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}th{background:#f3f3f3}code{font-size:12px}
meter{width:8rem;vertical-align:middle}button{font-size:12px;margin-left:.4rem}form label{margin-right:1rem;white-space:nowrap}
input[type=number]{width:5rem}#status{min-height:1.2em;font-weight:600}`;
const sha256 = (s: string) => `'sha256-${createHash('sha256').update(s, 'utf8').digest('base64')}'`;
const DASHBOARD_CSP = `default-src 'none'; script-src ${sha256(DASHBOARD_SCRIPT)}; style-src ${sha256(STYLE)}; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'`;

function page(title: string, body: string, head = ''): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8">${head}<title>${e(title)}</title><style>${STYLE}</style></head><body>${body}</body></html>`;
}

export function webhookStateText(d: WebhookDispatch): string {
  switch (d.state) {
    case 'delivered':
      return `delivered (attempt ${d.attempts} of ${WEBHOOK_MAX_ATTEMPTS})`;
    case 'retrying':
      return `retrying (attempt ${d.attempts} of ${WEBHOOK_MAX_ATTEMPTS} failed: ${d.last_answer ?? 'no answer'})`;
    case 'failed':
      return `failed for good after ${d.attempts} attempts (${d.last_answer ?? 'no answer'})`;
    case 'dropped':
      return 'dropped (fault injection)';
    case 'held':
      return 'held back (fault injection: reorder)';
    case 'no_endpoint':
      return 'not sent: no webhook endpoint configured';
    default:
      return 'sending';
  }
}

/** A rolling window as the gauges show it: used of limit, the window in provider and real time. */
export interface GaugeView {
  family: CallFamily;
  used: number;
  limit: number;
  text: string;
}

/** GET /_sim/overview: everything the dashboard shows. No key, no secret, no personal data. */
export interface DashboardView {
  time_scale: number;
  keys: { label: string; fingerprint: string; gauges: GaugeView[] }[];
  faults: SimContext['faults'];
  webhook_endpoint: string | null;
  delivery_count: number;
  deliveries: {
    id: string;
    status: string;
    reference_number: string;
    key_fingerprint: string;
    price: string;
    updated_at: string;
    can_advance: boolean;
    destinations: { id: string; status: string; can_advance: boolean }[];
  }[];
  webhooks: { event_id: string; copy: boolean; type: string; delivery_id: string; destination_id: string; status: string; state: string }[];
}

const seconds = (ms: number) => `${Number((ms / 1000).toPrecision(3))} s`;

function gauge(ctx: SimContext, scope: string, family: CallFamily): GaugeView {
  const u = ctx.limiter.usage(scope, family);
  const real = ctx.scale.factor === 1 ? '' : ` (${seconds(u.windowMs)} real)`;
  const frees = u.freesInMs === null ? '' : `; a slot frees in ${seconds(u.freesInMs)}`;
  return { family, used: u.used, limit: u.limit, text: `${u.used} / ${u.limit} ${family} in the last ${seconds(u.windowMs * ctx.scale.factor)}${real}${frees}` };
}

export function dashboardView(ctx: SimContext): DashboardView {
  return {
    time_scale: ctx.scale.factor,
    // The digest's first 12 characters are the fingerprint logs show; never the key itself.
    keys: ctx.keyScopes.map((scope, i) => {
      const account = ctx.accounts.ofScope(scope)?.id;
      return { label: account !== undefined ? `account ${account}` : i === 0 ? 'default key' : `key ${i + 1}`, fingerprint: scope.slice(0, 12), gauges: FAMILIES.map((f) => gauge(ctx, scope, f)) };
    }),
    faults: ctx.faults,
    webhook_endpoint: ctx.webhooks.endpoint?.url ?? null,
    delivery_count: ctx.store.size,
    deliveries: ctx.store
      .all()
      .slice(-SHOWN)
      .reverse()
      .map(({ record: r, fingerprint }) => ({
        id: r.id,
        status: r.status,
        reference_number: r.reference_number ?? '',
        key_fingerprint: fingerprint,
        price: formatMoney(r.price),
        updated_at: r.updated_at,
        can_advance: isKnownDeliveryStatus(r.status) && !isTerminalDelivery(r.status),
        destinations: r.destinations.map((d) => ({ id: d.id, status: d.status, can_advance: !isTerminalDestination(d.status) })),
      })),
    webhooks: ctx.webhooks
      .dispatchList()
      .slice(-SHOWN)
      .reverse()
      .map((d) => ({ event_id: d.event_id, copy: d.copy > 0, type: d.type, delivery_id: d.delivery_id, destination_id: d.destination_id ?? '', status: d.status, state: webhookStateText(d) })),
  };
}

// The row renderers below have twins in dashboard-script.ts (the live updates); keep them alike.
const advanceButton = (id: string, dst?: string) => `<button type="button" data-advance="${e(id)}"${dst ? ` data-destination="${e(dst)}"` : ''}>advance</button>`;

function keyRows(v: DashboardView): string {
  return v.keys
    .map((k) => `<tr><td>${e(k.label)}</td><td><code>${e(k.fingerprint)}</code></td>${k.gauges.map((g) => `<td><meter min="0" max="${g.limit}" value="${g.used}"></meter> ${e(g.text)}</td>`).join('')}</tr>`)
    .join('');
}

function deliveryRows(v: DashboardView): string {
  return v.deliveries
    .map((d) => {
      const dests = d.destinations.map((x) => `<code>${e(x.id)}</code> ${e(x.status)}${x.can_advance ? advanceButton(d.id, x.id) : ''}`).join('<br>');
      return `<tr data-delivery="${e(d.id)}"><td><code>${e(d.id)}</code></td><td class="status">${e(d.status)}${d.can_advance ? advanceButton(d.id) : ''}</td><td>${e(d.reference_number)}</td>
<td>${dests}</td><td>${e(d.price)}</td><td><code>${e(d.key_fingerprint)}</code></td><td>${e(d.updated_at)}</td></tr>`;
    })
    .join('');
}

function webhookRows(v: DashboardView): string {
  return v.webhooks
    .map((w) => `<tr><td><code>${e(w.event_id)}</code>${w.copy ? ' (copy)' : ''}</td><td>${e(w.type)}</td><td><code>${e(w.delivery_id)}</code></td><td><code>${e(w.destination_id)}</code></td><td>${e(w.status)}</td><td>${e(w.state)}</td></tr>`)
    .join('');
}

const RATE_FIELDS = ['error_rate', 'webhook_drop_rate', 'webhook_duplicate_rate', 'webhook_reorder_rate'] as const;

function faultsForm(v: DashboardView): string {
  const f = v.faults;
  const rates = RATE_FIELDS.map((k) => `<label>${k} <input type="number" name="${k}" min="0" max="1" step="0.01" value="${f[k]}"></label>`).join('');
  return `<form id="faults">${rates}<label>latency_ms <input type="number" name="latency_ms" min="0" max="120000" step="1" value="${f.latency_ms}"></label>
<label><input type="checkbox" name="ignore_idempotency_keys"${f.ignore_idempotency_keys ? ' checked' : ''}> ignore_idempotency_keys</label>
<label>reference_faults <input type="text" name="reference_faults" size="30" value="${e(JSON.stringify(f.reference_faults))}"></label>
<button type="submit">apply faults</button></form>`;
}

export function dashboardPage(ctx: SimContext): { html: string; headers: Record<string, string> } {
  const v = dashboardView(ctx);
  const html = page(
    'Provider sandbox simulator',
    `<h1>Provider sandbox simulator</h1>
<p>Local test tool; the /_sim routes have no authentication. Time scale <span id="scale">${e(String(v.time_scale))}</span>;
webhook endpoint: <span id="endpoint">${e(v.webhook_endpoint ?? 'none')}</span>. Newest ${SHOWN} shown, <span id="live">refreshes every 2 s</span>.</p>
<p id="status" role="status"></p>
<h2>Rate windows per API key</h2>
<table><thead><tr><th>key</th><th>fingerprint</th>${FAMILIES.map((f) => `<th>${f}</th>`).join('')}</tr></thead><tbody id="keys">${keyRows(v)}</tbody></table>
<h2>Faults</h2>${faultsForm(v)}
<h2>Deliveries (<span id="delivery-count">${v.delivery_count}</span>)</h2>
<table><thead><tr><th>id</th><th>status</th><th>reference</th><th>destinations</th><th>price</th><th>key</th><th>updated</th></tr></thead><tbody id="deliveries">${deliveryRows(v)}</tbody></table>
<h2>Webhooks</h2>
<table><thead><tr><th>event</th><th>type</th><th>delivery</th><th>destination</th><th>status</th><th>state</th></tr></thead><tbody id="webhooks">${webhookRows(v)}</tbody></table>
<script>${DASHBOARD_SCRIPT}</script>`,
    // Without JavaScript the page still refreshes itself, as it always did.
    '<noscript><meta http-equiv="refresh" content="2"></noscript>',
  );
  return { html, headers: { 'content-security-policy': DASHBOARD_CSP, 'cache-control': 'no-store' } };
}

/** The public tracking page: status and time window only. Null when the id is unknown. */
export function trackingPage(ctx: SimContext, destinationId: string): string | null {
  const found = ctx.store.destination(destinationId);
  if (!found) return null;
  const d = found.destination;
  return page(
    'Parcel tracking',
    `<h1>Parcel tracking</h1><table><tr><th>status</th><td>${e(d.status)}</td></tr>
<tr><th>time window</th><td>${e(d.time_window_start)} – ${e(d.time_window_end)}</td></tr>
<tr><th>last update</th><td>${e(d.updated_at)}</td></tr></table>`,
  );
}
