/**
 * Activities: one per provider call, built by a factory that receives the API client (so the
 * worker owns the key and tests can pass a client pointed at the simulator). Each honours the
 * activity's cancellation signal and turns provider errors into typed failures.
 */
import { Context } from '@temporalio/activity';
import type { ProviderClient } from '../provider/client';
import type { CreateDeliveryRequest, DeliveryRecord, Quote, UpdateDeliveryRequest } from '../provider/schemas';
import { withProviderFailures } from './failures';

export interface CreateDeliveryInput {
  request: CreateDeliveryRequest & { reference_number: string };
  /** Derived from the workflow ID: every attempt, and every run of the same workflow, sends the same key. */
  idempotencyKey: string;
}

/** A call made inside a limiter slot reports when its answer came back (see workflows/slot-window.ts). */
export interface Answered<T> {
  value: T;
  answeredAt: number;
}

export interface CreateInSlotInput extends CreateDeliveryInput {
  /** An earlier attempt may have reached the provider: look the delivery up before creating. */
  lookFirst: boolean;
  /** The slot's time: the call waits until then (epoch ms; see workflows/slot-window.ts). */
  notBefore?: number;
}

export function createProviderActivities(provider: ProviderClient) {
  const signal = () => Context.current().cancellationSignal;
  const answered = async <T>(value: Promise<T>): Promise<Answered<T>> => ({ value: await value, answeredAt: Date.now() });
  /** A slot granted ahead of its time: wait here, where the wait costs no round trip. */
  const untilSlot = async (notBefore: number | undefined) => {
    const wait = (notBefore ?? 0) - Date.now();
    if (wait > 0) await Context.current().sleep(wait);
  };

  /** Finds the delivery an earlier attempt created and lost the answer of, if there is one. */
  const findEarlier = async (reference: string): Promise<DeliveryRecord | undefined> => {
    // The idempotency key covers that at a provider that honours it; for one that does not, look first.
    const existing = await provider.findDeliveryByReference(reference, { signal: signal() });
    if (existing) Context.current().log.info('found the delivery an earlier attempt created', { deliveryId: existing.id });
    return existing;
  };

  return {
    quoteDelivery: withProviderFailures(async (request: CreateDeliveryRequest): Promise<Quote> => provider.quote(request, { signal: signal() })),

    createDelivery: withProviderFailures(async ({ request, idempotencyKey }: CreateDeliveryInput): Promise<DeliveryRecord> => {
      const ctx = Context.current();
      const existing = ctx.info.attempt > 1 ? await findEarlier(request.reference_number) : undefined;
      if (existing) return existing;
      const { delivery, replayed } = await provider.createDelivery(request, { idempotencyKey, signal: signal() });
      ctx.log.info('delivery created at the provider', { deliveryId: delivery.id, replayed });
      return delivery;
    }),

    /** One quote call in a limiter slot (one attempt: each retry takes a slot of its own). */
    quoteInSlot: withProviderFailures(async (request: CreateDeliveryRequest, notBefore?: number): Promise<Answered<Quote>> => {
      await untilSlot(notBefore);
      return answered(provider.quote(request, { signal: signal() }));
    }),

    /** One creation call in a limiter slot; the lookup by reference uses the other calls' budget. */
    createInSlot: withProviderFailures(async ({ request, idempotencyKey, lookFirst, notBefore }: CreateInSlotInput): Promise<Answered<DeliveryRecord>> => {
      await untilSlot(notBefore);
      const existing = lookFirst ? await findEarlier(request.reference_number) : undefined;
      if (existing) return { value: existing, answeredAt: Date.now() };
      const created = await answered(provider.createDelivery(request, { idempotencyKey, signal: signal() }));
      Context.current().log.info('delivery created at the provider', { deliveryId: created.value.delivery.id, replayed: created.value.replayed });
      return { value: created.value.delivery, answeredAt: created.answeredAt };
    }),

    getDelivery: withProviderFailures(async (deliveryId: string): Promise<DeliveryRecord> => provider.getDelivery(deliveryId, { signal: signal() })),

    updateDelivery: withProviderFailures(
      async ({ deliveryId, patch }: { deliveryId: string; patch: UpdateDeliveryRequest }): Promise<DeliveryRecord> =>
        provider.updateDelivery(deliveryId, patch, { signal: signal() }),
    ),

    cancelDelivery: withProviderFailures(async (deliveryId: string): Promise<DeliveryRecord> => provider.cancelDelivery(deliveryId, { signal: signal() })),
  };
}

export type ProviderActivities = ReturnType<typeof createProviderActivities>;
