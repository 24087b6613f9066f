/**
 * Webhook sender (contract § Webhooks): one signed POST per event, any 2xx is success, otherwise
 * retried: 7 attempts in all at WEBHOOK_RETRY_DELAYS_MS (divided by the time scale). Sending is
 * asynchronous and never blocks an API answer; every failure is caught and logged, never thrown.
 *
 * First attempts of one delivery's events go out one after another, so a healthy receiver sees
 * them in order; events of different deliveries go in parallel over a keep-alive pool. Retries
 * are independent (the contract does not guarantee order). Faults can drop, duplicate or
 * reorder events.
 */
import { Agent, request } from 'undici';
import { WEBHOOK_RETRY_DELAYS_MS } from '../provider/limits';
import type { WebhookEvent } from '../provider/schemas';
import { signWebhook } from '../provider/webhook-signature';
import { CappedLog } from './capped-log';
import { type Clock, iso, type TimeScale } from './clock';
import { type Faults, roll } from './faults';
import { newId } from './store';

export const WEBHOOK_MAX_ATTEMPTS = 1 + WEBHOOK_RETRY_DELAYS_MS.length;

export interface WebhookEndpoint {
  url: string;
  secret: string;
}

export type EventInput =
  | { type: 'delivery.status_changed'; delivery_id: string; status: string }
  | { type: 'destination.status_changed'; delivery_id: string; destination_id: string; status: string };

export interface WebhookAttempt {
  event_id: string;
  type: WebhookEvent['type'];
  delivery_id: string;
  destination_id: string | null;
  status: string;
  /** 1 for the second copy of a duplicated event. */
  copy: number;
  attempt: number;
  url: string;
  answer_status: number | null;
  error: string | null;
  sent_at: string;
  duration_ms: number;
  /** When the next attempt is due, or null when this was the last one. */
  next_attempt_at: string | null;
  outcome: 'delivered' | 'retrying' | 'failed_for_good';
}

export const DISPATCH_STATES = ['sending', 'delivered', 'retrying', 'failed', 'dropped', 'held', 'no_endpoint'] as const;
export type DispatchState = (typeof DISPATCH_STATES)[number];
/** States in which the event still has attempts to make. */
const PENDING_STATES: ReadonlySet<DispatchState> = new Set(['sending', 'retrying', 'held']);

/** One event's fate as the dashboard shows it (a duplicated event has two copies). */
export interface WebhookDispatch {
  event_id: string;
  copy: number;
  type: WebhookEvent['type'];
  delivery_id: string;
  destination_id: string | null;
  status: string;
  created_at: string;
  state: DispatchState;
  attempts: number;
  last_answer: string | null;
}

interface Job {
  event: WebhookEvent;
  body: string;
  endpoint: WebhookEndpoint;
  dispatch: WebhookDispatch;
  /** The sender generation it belongs to: a reset orphans it. */
  generation: number;
}

export interface WebhookSenderOptions {
  scale: TimeScale;
  now: Clock;
  random: () => number;
  faults: () => Faults;
  /** Real milliseconds per attempt (not scaled: it models the network). */
  timeoutMs: number;
  logCap: number;
  onError: (message: string) => void;
  /** Called when an attempt changed an event's state (the state file marks itself dirty). */
  onChange?: () => void;
  /**
   * Where one delivery's events go: its account's endpoint (simulator/accounts.ts), `undefined`
   * for a delivery of no account (the sender's `endpoint`). Asked at each event's first attempt
   * and at resume.
   */
  endpointFor?: (deliveryId: string) => WebhookEndpoint | null | undefined;
}

/** An event's dispatch as the state file keeps it: when its next attempt is due, if it has one. */
export type SavedDispatch = WebhookDispatch & { next_attempt_at: number | null };

/** The event a dispatch stands for, rebuilt field by field in the order emit() builds it. */
function eventOf(d: WebhookDispatch): WebhookEvent {
  const base = { id: d.event_id, created_at: d.created_at };
  return d.type === 'delivery.status_changed' || d.destination_id === null
    ? { ...base, type: 'delivery.status_changed', data: { delivery_id: d.delivery_id, status: d.status } }
    : { ...base, type: 'destination.status_changed', data: { delivery_id: d.delivery_id, destination_id: d.destination_id, status: d.status } };
}

export class WebhookSender {
  endpoint: WebhookEndpoint | null = null;
  readonly attempts: CappedLog<WebhookAttempt>;
  private readonly dispatches = new Map<string, WebhookDispatch>();
  private readonly agent = new Agent({ keepAliveTimeout: 10_000, connections: 128 });
  private readonly timers = new Set<NodeJS.Timeout>();
  /** Per delivery: the tail of its chain of first attempts. */
  private readonly lanes = new Map<string, Promise<void>>();
  private held: { job: Job; timer: NodeJS.Timeout } | null = null;
  /** When each event waiting for a retry is due (Date.now() ms); only such events are in here. */
  private readonly retryDue = new Map<WebhookDispatch, number>();
  /** Events restored from a state file, sent again by resume(). */
  private toResume: WebhookDispatch[] = [];
  private inFlight = 0;
  /** Bumped by reset/close so callbacks of an earlier generation do nothing. */
  private generation = 0;
  private closed = false;

  constructor(private readonly o: WebhookSenderOptions) {
    this.attempts = new CappedLog<WebhookAttempt>(o.logCap);
  }

  /** Builds the event for one status change and sends it (subject to faults). Never throws. */
  emit(input: EventInput): WebhookEvent {
    const base = { id: newId('evt'), created_at: iso(this.o.now()) };
    const event: WebhookEvent =
      input.type === 'delivery.status_changed'
        ? { ...base, type: input.type, data: { delivery_id: input.delivery_id, status: input.status } }
        : { ...base, type: input.type, data: { delivery_id: input.delivery_id, destination_id: input.destination_id, status: input.status } };
    try {
      this.route(event);
    } catch (e) {
      this.o.onError(`webhook dispatch failed: ${String(e)}`);
    }
    return event;
  }

  private route(event: WebhookEvent): void {
    if (this.closed) return;
    const faults = this.o.faults();
    const endpoint = this.endpointOf(event.data.delivery_id);
    if (!endpoint) {
      this.track(event, 0, 'no_endpoint');
      return;
    }
    if (roll(this.o.random, faults.webhook_drop_rate)) {
      this.track(event, 0, 'dropped');
      return;
    }
    const copies = roll(this.o.random, faults.webhook_duplicate_rate) ? 2 : 1;
    const body = JSON.stringify(event);
    const jobs: Job[] = [];
    for (let copy = 0; copy < copies; copy++) jobs.push({ event, body, endpoint, dispatch: this.track(event, copy, 'sending'), generation: this.generation });

    const released = this.held;
    if (released) {
      // A held-back event goes out right after the one that overtook it.
      this.held = null;
      clearTimeout(released.timer);
      this.timers.delete(released.timer);
      for (const j of jobs) this.startFirst(j);
      released.job.dispatch.state = 'sending';
      this.startFirst(released.job);
      return;
    }
    const [first, ...rest] = jobs as [Job, ...Job[]];
    if (roll(this.o.random, faults.webhook_reorder_rate)) {
      // Hold it for the next event; if none comes soon, send it anyway (never lose it).
      first.dispatch.state = 'held';
      const timer = this.schedule(this.o.scale.real(WEBHOOK_RETRY_DELAYS_MS[0] ?? 5_000), () => {
        if (this.held?.job !== first) return;
        this.held = null;
        first.dispatch.state = 'sending';
        this.startFirst(first);
      });
      this.held = { job: first, timer };
    } else {
      this.startFirst(first);
    }
    for (const j of rest) this.startFirst(j);
  }

  private endpointOf(deliveryId: string): WebhookEndpoint | null {
    const own = this.o.endpointFor?.(deliveryId);
    return own === undefined ? this.endpoint : own;
  }

  private track(event: WebhookEvent, copy: number, state: DispatchState): WebhookDispatch {
    const d: WebhookDispatch = {
      event_id: event.id,
      copy,
      type: event.type,
      delivery_id: event.data.delivery_id,
      destination_id: 'destination_id' in event.data ? event.data.destination_id : null,
      status: event.data.status,
      created_at: event.created_at,
      state,
      attempts: 0,
      last_answer: null,
    };
    this.dispatches.set(`${event.id}#${copy}`, d);
    // Bounded like the logs: forget the oldest.
    if (this.dispatches.size > this.o.logCap) {
      const oldest = this.dispatches.keys().next();
      if (!oldest.done) this.dispatches.delete(oldest.value);
    }
    return d;
  }

  /** First attempts of one delivery are chained so they leave in emission order. */
  private startFirst(job: Job): void {
    const lane = job.event.data.delivery_id;
    const prev = this.lanes.get(lane) ?? Promise.resolve();
    const next = prev.then(() => this.attempt(job, 1));
    this.lanes.set(lane, next);
    void next.finally(() => {
      if (this.lanes.get(lane) === next) this.lanes.delete(lane);
    });
  }

  private schedule(delayMs: number, fn: () => void): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      try {
        fn();
      } catch (e) {
        this.o.onError(`webhook timer failed: ${String(e)}`);
      }
    }, delayMs);
    this.timers.add(timer);
    return timer;
  }

  private async attempt(job: Job, n: number): Promise<void> {
    if (this.closed || job.generation !== this.generation) return;
    const { event, endpoint, dispatch } = job;
    const startedAt = this.o.now();
    const started = performance.now();
    let answer: number | null = null;
    let error: string | null = null;
    this.inFlight++;
    try {
      // The timestamp is taken per attempt, so a late retry still passes the receiver's tolerance.
      const signed = signWebhook(endpoint.secret, event.id, Math.floor(startedAt / 1000), job.body);
      const res = await request(endpoint.url, {
        method: 'POST',
        headers: { ...signed, 'content-type': 'application/json', 'user-agent': 'delivery-orchestrator-simulator' },
        body: job.body,
        dispatcher: this.agent,
        signal: AbortSignal.timeout(this.o.timeoutMs),
      });
      answer = res.statusCode;
      await res.body.dump().catch(() => undefined);
    } catch (e) {
      error = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
    } finally {
      this.inFlight--;
    }
    if (job.generation !== this.generation || this.closed) return;

    const ok = answer !== null && answer >= 200 && answer < 300;
    const last = n >= WEBHOOK_MAX_ATTEMPTS;
    const delay = ok || last ? null : this.o.scale.real(WEBHOOK_RETRY_DELAYS_MS[n - 1] ?? 0);
    dispatch.attempts = n;
    dispatch.last_answer = answer !== null ? `HTTP ${answer}` : error;
    dispatch.state = ok ? 'delivered' : last ? 'failed' : 'retrying';
    if (delay === null) this.retryDue.delete(dispatch);
    else this.retryDue.set(dispatch, Date.now() + delay);
    this.o.onChange?.();
    this.attempts.push({
      event_id: event.id,
      type: event.type,
      delivery_id: dispatch.delivery_id,
      destination_id: dispatch.destination_id,
      status: dispatch.status,
      copy: dispatch.copy,
      attempt: n,
      url: endpoint.url,
      answer_status: answer,
      error,
      sent_at: iso(startedAt),
      duration_ms: Math.round((performance.now() - started) * 100) / 100,
      next_attempt_at: delay === null ? null : iso(this.o.now() + delay),
      outcome: ok ? 'delivered' : last ? 'failed_for_good' : 'retrying',
    });
    if (delay !== null) this.schedule(delay, () => void this.attempt(job, n + 1));
  }

  /** Newest last. */
  dispatchList(): WebhookDispatch[] {
    return [...this.dispatches.values()];
  }

  /**
   * For the state file: every event that still has attempts to make (sending, held back, or
   * waiting for a retry, with when the retry is due; an attempt in flight counts as not made),
   * and the newest `keepFinished` others for the dashboard. Oldest first.
   */
  saved(keepFinished: number): SavedDispatch[] {
    const all = [...this.dispatches.values()];
    const cut = all.length - keepFinished;
    const out: SavedDispatch[] = [];
    all.forEach((d, i) => {
      const pending = PENDING_STATES.has(d.state);
      if (pending || i >= cut) out.push({ ...d, next_attempt_at: pending ? (this.retryDue.get(d) ?? null) : null });
    });
    return out;
  }

  /** Puts back events from a state file (oldest first); the pending ones go out again on resume(). */
  restore(saved: readonly SavedDispatch[]): void {
    for (const { next_attempt_at, ...d } of saved) {
      const dispatch: WebhookDispatch = { ...d };
      this.dispatches.set(`${d.event_id}#${d.copy}`, dispatch);
      if (!PENDING_STATES.has(dispatch.state)) continue;
      if (next_attempt_at !== null && dispatch.attempts > 0) this.retryDue.set(dispatch, next_attempt_at);
      this.toResume.push(dispatch);
    }
  }

  /**
   * Sends restored events on: first attempts at once (one delivery's in their order), retries
   * when they are due (at once if that time passed while the simulator was stopped). They go to
   * the current endpoint of their delivery's account (or the sender's), signed with its secret.
   */
  resume(): void {
    const list = this.toResume;
    this.toResume = [];
    for (const dispatch of list) {
      if (!PENDING_STATES.has(dispatch.state)) continue;
      const endpoint = this.endpointOf(dispatch.delivery_id);
      if (!endpoint) {
        dispatch.state = 'no_endpoint';
        this.retryDue.delete(dispatch);
        continue;
      }
      const event = eventOf(dispatch);
      const job: Job = { event, body: JSON.stringify(event), endpoint, dispatch, generation: this.generation };
      const n = dispatch.attempts + 1;
      if (n === 1) {
        dispatch.state = 'sending';
        this.startFirst(job);
      } else {
        const due = this.retryDue.get(dispatch) ?? Date.now();
        this.schedule(Math.max(0, due - Date.now()), () => void this.attempt(job, n));
      }
    }
  }

  /** True when nothing is being sent, waiting for a retry, or held back. */
  get quiet(): boolean {
    return this.inFlight === 0 && this.timers.size === 0 && this.lanes.size === 0 && this.held === null;
  }

  reset(): void {
    this.generation++;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.lanes.clear();
    this.held = null;
    this.retryDue.clear();
    this.toResume = [];
    this.dispatches.clear();
    this.attempts.clear();
    this.endpoint = null;
  }

  async close(): Promise<void> {
    this.reset();
    this.closed = true;
    await this.agent.destroy().catch(() => undefined);
  }
}
