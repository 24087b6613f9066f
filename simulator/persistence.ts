/**
 * The simulator's state file (option `stateFile`, SIMULATOR_STATE_FILE), so a local stack that
 * is stopped and started again finds its deliveries where they were.
 *
 * Kept: deliveries and orders (per API key digest), idempotency records, the webhook endpoint,
 * the registered accounts (key digests, never keys; their webhook URL, secret and limits),
 * webhook events that still have attempts to make (and the newest finished ones, for the
 * dashboard), when each delivery's next auto-advance step is due, and the indexes the request
 * and webhook-attempt logs count on from. Not kept: the logs' entries, rate windows, faults.
 *
 * Written whole, atomically (a temporary file in the same folder, then rename), at most once per
 * interval while something changed, and on close; a SIGKILL loses at most one interval. Read
 * once at start and validated with zod: a file that is not what this simulator wrote stops the
 * start with a message naming the file and what is wrong, never a silent empty start.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { DeliveryRecordSchema, OrderRecordSchema, UtcTimestamp, WEBHOOK_EVENT_TYPES } from '../provider/schemas';
import { fieldIssues } from '../provider/validation';
import { WebhookSecretSchema } from '../provider/webhook-signature';
import { SimAccountIdSchema, SimLimitsSchema } from './accounts';
import { DISPATCH_STATES, WEBHOOK_MAX_ATTEMPTS } from './webhooks';

export const STATE_FORMAT = 'delivery-orchestrator/simulator-state';
export const STATE_VERSION = 1;
/** Finished webhook events kept in the file for the dashboard (pending ones are always kept). */
export const SAVED_FINISHED_EVENTS = 1_000;

const epochMs = z.number().int().nonnegative();
const digest = z.string().regex(/^[0-9a-f]{64}$/, { message: 'must be a SHA-256 hex digest' });

const WebhookEndpointSchema = z.object({ url: z.url({ protocol: /^https?$/ }), secret: WebhookSecretSchema });

const SavedAccountSchema = z.object({
  id: SimAccountIdSchema,
  scope: digest,
  key_digest: digest,
  webhook: WebhookEndpointSchema.nullable(),
  limits: SimLimitsSchema.nullable(),
});

const SavedDeliverySchema = z.object({
  scope: digest,
  fingerprint: z.string().regex(/^[0-9a-f]{12}$/),
  delivery: DeliveryRecordSchema,
  order: OrderRecordSchema,
  /** When the next auto-advance step is due (epoch ms), null when none was scheduled. */
  auto_advance_at: epochMs.nullable(),
});

const SavedIdempotencySchema = z.object({
  scope: digest,
  key: z.string().min(1).max(255),
  canonical_body: z.string(),
  delivery_id: z.string().min(1),
  expires_at: epochMs,
});

const SavedDispatchSchema = z
  .object({
    event_id: z.string().regex(/^evt_[A-Za-z0-9_-]+$/),
    copy: z.number().int().min(0).max(1),
    type: z.enum(WEBHOOK_EVENT_TYPES),
    delivery_id: z.string().min(1),
    destination_id: z.string().min(1).nullable(),
    status: z.string().min(1).max(64),
    created_at: UtcTimestamp,
    state: z.enum(DISPATCH_STATES),
    attempts: z.number().int().min(0).max(WEBHOOK_MAX_ATTEMPTS),
    last_answer: z.string().nullable(),
    next_attempt_at: epochMs.nullable(),
  })
  .refine((d) => (d.type === 'destination.status_changed') === (d.destination_id !== null), {
    message: 'destination_id must be set exactly for destination events',
    path: ['destination_id'],
  });

export const StateFileSchema = z
  .object({
    format: z.literal(STATE_FORMAT),
    version: z.literal(STATE_VERSION),
    saved_at: UtcTimestamp,
    deliveries: z.array(SavedDeliverySchema),
    idempotency: z.array(SavedIdempotencySchema),
    webhook_endpoint: WebhookEndpointSchema.nullable(),
    /** Absent in files written before accounts: none. */
    accounts: z.array(SavedAccountSchema).default([]),
    webhook_events: z.array(SavedDispatchSchema),
    counters: z.object({ requests: z.number().int().nonnegative(), webhook_attempts: z.number().int().nonnegative() }),
  })
  .superRefine((s, ctx) => {
    // What the store's indexes rely on: unique ids, and every reference pointing at a record.
    const deliveries = new Set<string>();
    const orders = new Set<string>();
    const destinations = new Set<string>();
    s.deliveries.forEach((d, i) => {
      const issue = (path: (string | number)[], message: string) => ctx.addIssue({ code: 'custom', path: ['deliveries', i, ...path], message });
      if (deliveries.has(d.delivery.id)) issue(['delivery', 'id'], `delivery ${d.delivery.id} appears twice`);
      deliveries.add(d.delivery.id);
      if (orders.has(d.order.id)) issue(['order', 'id'], `order ${d.order.id} appears twice`);
      orders.add(d.order.id);
      if (d.order.delivery_id !== d.delivery.id) issue(['order', 'delivery_id'], `does not match the delivery's id ${d.delivery.id}`);
      if (d.fingerprint !== d.scope.slice(0, 12)) issue(['fingerprint'], 'does not match scope');
      d.delivery.destinations.forEach((x, j) => {
        if (destinations.has(x.id)) issue(['delivery', 'destinations', j, 'id'], `destination ${x.id} appears twice`);
        destinations.add(x.id);
      });
    });
    const ids = new Set<string>();
    const keys = new Set<string>();
    s.accounts.forEach((a, i) => {
      if (ids.has(a.id)) ctx.addIssue({ code: 'custom', path: ['accounts', i, 'id'], message: `account ${a.id} appears twice` });
      ids.add(a.id);
      for (const d of new Set([a.scope, a.key_digest])) {
        if (keys.has(d)) ctx.addIssue({ code: 'custom', path: ['accounts', i, 'key_digest'], message: `account ${a.id} shares a key with another account` });
        keys.add(d);
      }
    });
    s.idempotency.forEach((r, i) => {
      if (!deliveries.has(r.delivery_id)) ctx.addIssue({ code: 'custom', path: ['idempotency', i, 'delivery_id'], message: `no delivery ${r.delivery_id} in this file` });
    });
  });

export type StateFile = z.infer<typeof StateFileSchema>;

/** A state file that cannot be used; the message names the file and the problem. */
export class StateFileError extends Error {
  constructor(file: string, problem: string) {
    super(`simulator state file ${file} ${problem}. Fix or move the file away (the simulator then starts empty), or set another SIMULATOR_STATE_FILE.`);
    this.name = 'StateFileError';
  }
}

/** Reads and validates the state file; undefined when it does not exist yet (a first start). */
export function readStateFile(file: string): StateFile | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new StateFileError(file, `cannot be read (${(e as Error).message})`);
  }
  if (text.trim() === '') throw new StateFileError(file, 'is empty');
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new StateFileError(file, `is not valid JSON (${(e as Error).message})`);
  }
  const head = raw !== null && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {};
  if (head.format !== STATE_FORMAT) throw new StateFileError(file, `is not a simulator state file (expected "format": "${STATE_FORMAT}")`);
  if (head.version !== STATE_VERSION) {
    throw new StateFileError(file, `has format version ${JSON.stringify(head.version)}, which this simulator cannot read (it reads version ${STATE_VERSION})`);
  }
  const parsed = StateFileSchema.safeParse(raw);
  if (!parsed.success) {
    const issues = fieldIssues(parsed.error);
    const shown = issues
      .slice(0, 5)
      .map((i) => `${i.field}: ${i.message}`)
      .join('; ');
    throw new StateFileError(file, `is not valid: ${shown}${issues.length > 5 ? `; and ${issues.length - 5} more` : ''}`);
  }
  return parsed.data;
}

const TMP_SUFFIX = '.tmp';
const TMP_PATTERN = /^\.\d+-[0-9a-f]{8}\.tmp$/;

/** Removes temporary files a killed simulator left next to the state file (never the file itself). */
export function removeStaleTemporaryFiles(file: string): void {
  const name = basename(file);
  let entries: string[];
  try {
    entries = readdirSync(dirname(file));
  } catch {
    return; // no folder yet: nothing to clean
  }
  for (const entry of entries) {
    if (entry.startsWith(name) && TMP_PATTERN.test(entry.slice(name.length))) rmSync(join(dirname(file), entry), { force: true });
  }
}

/** Writes the whole file atomically: a temporary file next to it (mode 0600: personal data and a secret), synced, then renamed. */
export async function writeStateFile(file: string, text: string): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}-${randomBytes(4).toString('hex')}${TMP_SUFFIX}`;
  try {
    const fh = await open(tmp, 'w', 0o600);
    try {
      await fh.writeFile(text, 'utf8');
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, file);
  } catch (e) {
    await rm(tmp, { force: true }).catch(() => undefined);
    throw e;
  }
}

/**
 * Saves the state at most once per interval while it is dirty, one write at a time, and a last
 * time on close. Everything it writes comes from `snapshot`, called only when a write is due.
 */
export class StatePersister {
  readonly file: string;
  private dirty = false;
  /** The write under way (it never rejects), or null. */
  private writing: Promise<void> | null = null;
  private readonly timer: NodeJS.Timeout;
  private stopped = false;

  constructor(
    file: string,
    private readonly snapshot: () => StateFile,
    intervalMs: number,
    private readonly onError: (message: string) => void,
  ) {
    this.file = resolve(file);
    removeStaleTemporaryFiles(this.file);
    this.timer = setInterval(() => this.flush(), intervalMs);
    this.timer.unref();
  }

  markDirty(): void {
    this.dirty = true;
  }

  /** Starts a write if something changed and none is under way. */
  private flush(): void {
    if (!this.dirty || this.writing || this.stopped) return;
    this.dirty = false;
    this.track(writeStateFile(this.file, JSON.stringify(this.snapshot()))).catch((e: unknown) => {
      this.dirty = true; // try again next interval
      this.onError(`could not save the state file ${this.file}: ${e instanceof Error ? e.message : String(e)}`);
    });
  }

  private track(p: Promise<void>): Promise<void> {
    const settled = p.then(
      () => undefined,
      () => undefined,
    );
    this.writing = settled;
    void settled.then(() => {
      if (this.writing === settled) this.writing = null;
    });
    return p;
  }

  /** Writes now, after any write under way (the snapshot is taken once that one is done); rejects if the write fails. */
  async save(state?: StateFile): Promise<void> {
    while (this.writing) await this.writing;
    this.dirty = false;
    await this.track(writeStateFile(this.file, JSON.stringify(state ?? this.snapshot())));
  }

  /** No more periodic writes; the caller saves the final state. */
  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
  }
}
