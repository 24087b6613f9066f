/**
 * In-memory records: deliveries, their orders, and idempotency records, each scoped to the API
 * key that created them (by the key's digest). Lookups by id are O(1); listing walks one key's
 * deliveries newest first and stops once the page is full.
 */
import { randomBytes } from 'node:crypto';
import type { DeliveryRecord, DestinationRecord, OrderRecord } from '../provider/schemas';

export interface StoredDelivery {
  /** Digest of the owning API key. */
  scope: string;
  fingerprint: string;
  record: DeliveryRecord;
  order: OrderRecord;
}

export interface IdempotencyRecord {
  canonicalBody: string;
  deliveryId: string;
  expiresAt: number;
}

export interface Page<T> {
  data: T[];
  page: number;
  page_size: number;
  has_more: boolean;
}

/** `del_…`, `dst_…`, `ord_…`, `evt_…`: prefix plus 16 random url-safe characters. */
export function newId(prefix: 'del' | 'dst' | 'ord' | 'evt'): string {
  return `${prefix}_${randomBytes(12).toString('base64url')}`;
}

/**
 * Key-order-independent JSON text of a parsed body, for "same body" comparisons. Builds a
 * string directly (never an object), so a `__proto__` key cannot touch any prototype.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(',')}}`;
}

function paginate<T>(source: readonly T[], match: (t: T) => boolean, page: number, pageSize: number): Page<T> {
  const skip = (page - 1) * pageSize;
  const data: T[] = [];
  let seen = 0;
  let hasMore = false;
  for (let i = source.length - 1; i >= 0; i--) {
    const item = source[i] as T;
    if (!match(item)) continue;
    if (seen++ < skip) continue;
    if (data.length === pageSize) {
      hasMore = true;
      break;
    }
    data.push(item);
  }
  return { data, page, page_size: pageSize, has_more: hasMore };
}

export class Store {
  private readonly deliveries = new Map<string, StoredDelivery>();
  private readonly orders = new Map<string, StoredDelivery>();
  private readonly destinations = new Map<string, { delivery: StoredDelivery; destination: DestinationRecord }>();
  /** Per key, in creation order (so newest first = walk backwards). */
  private readonly byScope = new Map<string, StoredDelivery[]>();
  /** Per key and reference number: the reconcile-before-re-create lookup stays O(matches). */
  private readonly byReference = new Map<string, StoredDelivery[]>();
  /** Insertion order = expiry order (the TTL is constant), so expired records sit at the front. */
  private readonly idempotency = new Map<string, IdempotencyRecord>();

  add(sd: StoredDelivery): void {
    this.deliveries.set(sd.record.id, sd);
    this.orders.set(sd.order.id, sd);
    for (const d of sd.record.destinations) this.destinations.set(d.id, { delivery: sd, destination: d });
    let list = this.byScope.get(sd.scope);
    if (!list) this.byScope.set(sd.scope, (list = []));
    list.push(sd);
    if (sd.record.reference_number !== null) {
      const refKey = `${sd.scope}\u0000${sd.record.reference_number}`;
      let refs = this.byReference.get(refKey);
      if (!refs) this.byReference.set(refKey, (refs = []));
      refs.push(sd);
    }
  }

  /** A delivery of this key, or undefined (another key's delivery is as good as absent). */
  delivery(scope: string, id: string): StoredDelivery | undefined {
    const sd = this.deliveries.get(id);
    return sd && sd.scope === scope ? sd : undefined;
  }

  /** Any key's delivery: for the control API and the dashboard only. */
  anyDelivery(id: string): StoredDelivery | undefined {
    return this.deliveries.get(id);
  }

  destination(id: string): { delivery: StoredDelivery; destination: DestinationRecord } | undefined {
    return this.destinations.get(id);
  }

  order(scope: string, id: string): OrderRecord | undefined {
    const sd = this.orders.get(id);
    return sd && sd.scope === scope ? sd.order : undefined;
  }

  listDeliveries(scope: string, filter: { status?: string; reference_number?: string }, page: number, pageSize: number): Page<DeliveryRecord> {
    // reference_number never changes after creation, so its index is exact; a status filter scans.
    const list = (filter.reference_number === undefined ? this.byScope.get(scope) : this.byReference.get(`${scope}\u0000${filter.reference_number}`)) ?? [];
    const match = (sd: StoredDelivery) =>
      (filter.status === undefined || sd.record.status === filter.status) &&
      (filter.reference_number === undefined || sd.record.reference_number === filter.reference_number);
    const p = paginate(list, match, page, pageSize);
    return { ...p, data: p.data.map((sd) => sd.record) };
  }

  listOrders(scope: string, deliveryId: string | undefined, page: number, pageSize: number): Page<OrderRecord> {
    const list = deliveryId === undefined ? (this.byScope.get(scope) ?? []) : [this.delivery(scope, deliveryId)].filter((x) => x !== undefined);
    const p = paginate(list, () => true, page, pageSize);
    return { ...p, data: p.data.map((sd) => sd.order) };
  }

  /** Every delivery of every key, oldest first. */
  all(): StoredDelivery[] {
    return [...this.deliveries.values()];
  }

  get size(): number {
    return this.deliveries.size;
  }

  findIdempotency(scope: string, key: string, now: number): IdempotencyRecord | undefined {
    const id = `${scope}\u0000${key}`;
    const rec = this.idempotency.get(id);
    if (rec && rec.expiresAt <= now) {
      this.idempotency.delete(id);
      return undefined;
    }
    return rec;
  }

  rememberIdempotency(scope: string, key: string, rec: IdempotencyRecord, now: number): void {
    for (const [id, r] of this.idempotency) {
      if (r.expiresAt > now) break;
      this.idempotency.delete(id);
    }
    this.idempotency.set(`${scope}\u0000${key}`, rec);
  }

  /** Idempotency records still valid at `now`, oldest first (for the state file). */
  idempotencyEntries(now: number): { scope: string; key: string; record: IdempotencyRecord }[] {
    const out: { scope: string; key: string; record: IdempotencyRecord }[] = [];
    for (const [id, record] of this.idempotency) {
      if (record.expiresAt <= now) continue;
      const cut = id.indexOf('\u0000');
      out.push({ scope: id.slice(0, cut), key: id.slice(cut + 1), record });
    }
    return out;
  }

  /** Puts back a record from the state file; call in expiry order (as idempotencyEntries gives them). */
  restoreIdempotency(scope: string, key: string, rec: IdempotencyRecord): void {
    this.idempotency.set(`${scope}\u0000${key}`, rec);
  }

  clear(): void {
    this.deliveries.clear();
    this.orders.clear();
    this.destinations.clear();
    this.byScope.clear();
    this.byReference.clear();
    this.idempotency.clear();
  }
}
