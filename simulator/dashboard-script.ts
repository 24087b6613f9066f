/**
 * The /_sim dashboard's inline script, plain browser JavaScript kept as a string (no build step,
 * no framework). It polls GET /_sim/overview once a second and redraws the gauges and tables with
 * the same markup as dashboard.ts, and sends the buttons and the faults form as same-origin JSON
 * POSTs to the control API (the guard lets them through: own Host, own Origin, application/json).
 * The page's CSP allows this exact text by hash, so any edit here updates the hash by itself.
 */
export const DASHBOARD_SCRIPT = String.raw`
'use strict';
const $ = (id) => document.getElementById(id);
const esc = (v) => String(v).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
const button = (id, dst) => '<button type="button" data-advance="' + esc(id) + '"' + (dst ? ' data-destination="' + esc(dst) + '"' : '') + '>advance</button>';
const say = (text) => { $('status').textContent = text; };

function render(v) {
  $('scale').textContent = String(v.time_scale);
  $('endpoint').textContent = v.webhook_endpoint || 'none';
  $('delivery-count').textContent = String(v.delivery_count);
  $('keys').innerHTML = v.keys.map((k) => '<tr><td>' + esc(k.label) + '</td><td><code>' + esc(k.fingerprint) + '</code></td>' +
    k.gauges.map((g) => '<td><meter min="0" max="' + g.limit + '" value="' + g.used + '"></meter> ' + esc(g.text) + '</td>').join('') + '</tr>').join('');
  $('deliveries').innerHTML = v.deliveries.map((d) => '<tr data-delivery="' + esc(d.id) + '"><td><code>' + esc(d.id) + '</code></td><td class="status">' +
    esc(d.status) + (d.can_advance ? button(d.id) : '') + '</td><td>' + esc(d.reference_number) + '</td><td>' +
    d.destinations.map((x) => '<code>' + esc(x.id) + '</code> ' + esc(x.status) + (x.can_advance ? button(d.id, x.id) : '')).join('<br>') +
    '</td><td>' + esc(d.price) + '</td><td><code>' + esc(d.key_fingerprint) + '</code></td><td>' + esc(d.updated_at) + '</td></tr>').join('');
  $('webhooks').innerHTML = v.webhooks.map((w) => '<tr><td><code>' + esc(w.event_id) + '</code>' + (w.copy ? ' (copy)' : '') + '</td><td>' + esc(w.type) +
    '</td><td><code>' + esc(w.delivery_id) + '</code></td><td><code>' + esc(w.destination_id) + '</code></td><td>' + esc(w.status) + '</td><td>' + esc(w.state) + '</td></tr>').join('');
}

async function send(path, body) {
  const r = await fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const answer = await r.json().catch(() => null);
  if (!r.ok) {
    const err = answer && answer.error;
    const details = err && err.details ? ': ' + err.details.map((i) => i.field + ' ' + i.message).join('; ') : '';
    throw new Error(err ? err.message + details : 'HTTP ' + r.status);
  }
  return answer;
}

let busy = false;
async function refresh() {
  if (busy) return;
  busy = true;
  try {
    const r = await fetch('/_sim/overview', { cache: 'no-store' });
    if (r.ok) {
      render(await r.json());
      $('live').textContent = 'live, updated ' + new Date().toLocaleTimeString();
    }
  } catch (e) {
    $('live').textContent = 'not live: ' + e.message;
  } finally {
    busy = false;
  }
}

document.addEventListener('click', async (ev) => {
  const b = ev.target.closest('button[data-advance]');
  if (!b) return;
  const id = b.dataset.advance;
  const dst = b.dataset.destination;
  try {
    const d = await send('/_sim/deliveries/' + encodeURIComponent(id) + '/advance', dst ? { destination_id: dst } : {});
    say(dst ? 'destination ' + dst + ' of ' + id + ' advanced' : id + ' is now ' + d.status);
  } catch (e) {
    say('advance failed: ' + e.message);
  }
  await refresh();
});

$('faults').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const f = ev.target.elements;
  try {
    const patch = { ignore_idempotency_keys: f.ignore_idempotency_keys.checked, reference_faults: JSON.parse(f.reference_faults.value || '{}') };
    for (const name of ['error_rate', 'webhook_drop_rate', 'webhook_duplicate_rate', 'webhook_reorder_rate', 'latency_ms']) patch[name] = Number(f[name].value);
    const now = await send('/_sim/faults', patch);
    say('faults set: ' + JSON.stringify(now));
  } catch (e) {
    say('faults not set: ' + e.message);
  }
});

setInterval(refresh, 1000);
refresh();
`;
