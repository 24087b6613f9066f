/**
 * What the Temporal Web UI shows for a delivery: a one-line static summary, fixed at start, and
 * current details kept up to date (markdown). Neither holds personal data: no names, phones or
 * addresses, only ids, statuses, time windows and tracking links.
 */
import { formatMoney } from '../provider/money';
import { startAccount } from '../contract/workflow-ids';
import type { DeliveryState, DeliveryWorkflowInput } from '../contract/delivery-types';

/** "3 stops · food · ref A-1042 · account shop-7": every account named, `default` too. */
export function deliverySummary(input: Pick<DeliveryWorkflowInput, 'reference' | 'order' | 'account'>): string {
  const n = input.order.destinations.length;
  return [`${n} ${n === 1 ? 'stop' : 'stops'}`, input.order.is_food ? 'food' : undefined, `ref ${input.reference}`, `account ${startAccount(input)}`].filter(Boolean).join(' · ');
}

function cell(text: string): string {
  return text.replace(/[|\n]/g, ' ');
}

export function deliveryDetails(s: DeliveryState): string {
  const price = s.price ?? s.quote?.price;
  const lines = [
    `**${s.status ?? s.phase}**${s.deliveryId ? ` · provider id \`${cell(s.deliveryId)}\`` : ''}${price ? ` · ${formatMoney(price)}${s.price ? '' : ' (quoted)'}` : ''}`,
  ];
  if (s.cancellation) lines.push('', `cancellation: ${s.cancellation.outcome}${s.cancellation.reason ? ` (${cell(s.cancellation.reason)})` : ''}`);
  if (s.destinations.length > 0) {
    lines.push('', '| stop | status | window (UTC) | tracking |', '|---|---|---|---|');
    for (const d of s.destinations) {
      const window = `${d.timeWindowStart.slice(11, 16)}–${d.timeWindowEnd.slice(11, 16)}`;
      lines.push(`| \`${cell(d.id)}\` | ${cell(d.status)} | ${window} | [track](${encodeURI(d.trackingUrl)}) |`);
    }
  }
  return lines.join('\n');
}

/** Fixed at start: when and what, never who or where. */
export function deliveryStaticDetails(input: Pick<DeliveryWorkflowInput, 'order'>): string {
  const o = input.order;
  const starts = o.destinations.map((d) => d.time_window_start).sort();
  const ends = o.destinations.map((d) => d.time_window_end).sort();
  const sizes = [...new Set(o.destinations.map((d) => d.package_type))].join(', ');
  return [`pickup ${o.desired_pickup_time}`, `delivery windows ${starts[0]} – ${ends.at(-1)}`, `parcels ${sizes}`].join('\n\n');
}
