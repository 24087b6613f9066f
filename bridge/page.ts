/**
 * GET / on the bridge: the recent webhooks for operators. Every value is escaped (a rejected
 * request's webhook-id is whatever the sender wrote), and nothing is shown that a record does
 * not hold: no secret, no header but webhook-id, no body beyond the verified event's ids and status.
 */
import { WEBHOOK_OUTCOMES } from './outcomes';
import type { WebhookRecord } from './recent';

export function escapeHtml(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const COLUMNS = ['time', 'event id', 'type', 'delivery id', 'status', 'HTTP', 'outcome', 'reason', 'workflow', 'ms'];

export function recentWebhooksPage(records: readonly WebhookRecord[], capacity: number): string {
  const counts = new Map<string, number>(WEBHOOK_OUTCOMES.map((o) => [o, 0]));
  for (const r of records) counts.set(r.outcome, (counts.get(r.outcome) ?? 0) + 1);
  const summary = [...counts].map(([o, n]) => `${escapeHtml(o)}: ${n}`).join(' · ');
  const rows = records
    .map((r) => {
      const cells = [new Date(r.at).toISOString(), r.eventId, r.type, r.deliveryId, r.status, r.httpStatus, r.outcome, r.reason, r.workflowId, r.ms.toFixed(1)];
      return `<tr class="${escapeHtml(r.outcome)}">${cells.map((c) => `<td>${escapeHtml(c)}</td>`).join('')}</tr>`;
    })
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Webhook bridge</title>
<style>
body{font:14px system-ui,sans-serif;margin:1.5rem}table{border-collapse:collapse}td,th{padding:.2rem .6rem;border-bottom:1px solid #ddd;text-align:left;white-space:nowrap}
tr.rejected td{color:#a00}tr.retry_later td{color:#a60}tr.duplicate td,tr.workflow_closed td{color:#666}
</style></head><body>
<h1>Webhook bridge</h1>
<p>The last ${records.length} of at most ${capacity} webhooks, newest first (${summary}). Metrics: <a href="/metrics">/metrics</a>.</p>
<table><thead><tr>${COLUMNS.map((c) => `<th>${escapeHtml(c)}</th>`).join('')}</tr></thead>
<tbody>
${rows}
</tbody></table>
</body></html>
`;
}
