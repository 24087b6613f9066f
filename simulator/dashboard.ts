/**
 * HTML pages: the /_sim dashboard (deliveries, destinations, webhook state, like the provider's
 * own dashboard) and the public /track/{destination_id} page. Every value is escaped; the
 * tracking page shows only the status and the time window, no personal data.
 */
import type { SimContext } from './context';
import { escapeHtml as e } from './http-util';
import { WEBHOOK_MAX_ATTEMPTS, type WebhookDispatch } from './webhooks';

const SHOWN = 200;
const STYLE = `body{font:14px system-ui,sans-serif;margin:1.5rem;color:#222}table{border-collapse:collapse;margin:.5rem 0 1.5rem}
td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}th{background:#f3f3f3}code{font-size:12px}`;

function page(title: string, body: string, refreshSeconds?: number): string {
  const refresh = refreshSeconds ? `<meta http-equiv="refresh" content="${refreshSeconds}">` : '';
  return `<!doctype html><html lang="en"><head><meta charset="utf-8">${refresh}<title>${e(title)}</title><style>${STYLE}</style></head><body>${body}</body></html>`;
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

export function dashboardPage(ctx: SimContext): string {
  const deliveries = ctx.store.all().slice(-SHOWN).reverse();
  const rows = deliveries
    .map(({ record: r, order, fingerprint }) => {
      const dests = r.destinations.map((d) => `<code>${e(d.id)}</code> ${e(d.status)}`).join('<br>');
      return `<tr><td><code>${e(r.id)}</code></td><td>${e(r.status)}</td><td>${e(r.reference_number ?? '')}</td><td>${dests}</td>
<td>${e(String(r.price.amount))} ${e(r.price.currency)}</td><td>${e(order.status)}</td><td><code>${e(fingerprint)}</code></td><td>${e(r.updated_at)}</td></tr>`;
    })
    .join('');
  const hooks = ctx.webhooks
    .dispatchList()
    .slice(-SHOWN)
    .reverse()
    .map(
      (d) => `<tr><td><code>${e(d.event_id)}</code>${d.copy ? ' (copy)' : ''}</td><td>${e(d.type)}</td><td><code>${e(d.delivery_id)}</code></td>
<td><code>${e(d.destination_id ?? '')}</code></td><td>${e(d.status)}</td><td>${e(webhookStateText(d))}</td></tr>`,
    )
    .join('');
  const faults = Object.entries(ctx.faults)
    .map(([k, v]) => `${e(k)}=${e(String(v))}`)
    .join(', ');
  return page(
    'Provider sandbox simulator',
    `<h1>Provider sandbox simulator</h1>
<p>Local test tool; the /_sim routes have no authentication. Time scale ${e(String(ctx.scale.factor))}; faults: ${faults};
webhook endpoint: ${e(ctx.webhooks.endpoint?.url ?? 'none')}. Newest ${SHOWN} shown, refreshes every 2 s.</p>
<h2>Deliveries (${ctx.store.size})</h2>
<table><tr><th>id</th><th>status</th><th>reference</th><th>destinations</th><th>price</th><th>order</th><th>key</th><th>updated</th></tr>${rows}</table>
<h2>Webhooks</h2>
<table><tr><th>event</th><th>type</th><th>delivery</th><th>destination</th><th>status</th><th>state</th></tr>${hooks}</table>`,
    2,
  );
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
