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

export function createProviderActivities(provider: ProviderClient) {
  const signal = () => Context.current().cancellationSignal;

  return {
    quoteDelivery: withProviderFailures(async (request: CreateDeliveryRequest): Promise<Quote> => provider.quote(request, { signal: signal() })),

    createDelivery: withProviderFailures(async ({ request, idempotencyKey }: CreateDeliveryInput): Promise<DeliveryRecord> => {
      const ctx = Context.current();
      if (ctx.info.attempt > 1) {
        // An earlier attempt may have created the delivery and lost the answer. The idempotency
        // key covers that at a provider that honours it; for one that does not, look first.
        const existing = await provider.findDeliveryByReference(request.reference_number, { signal: signal() });
        if (existing) {
          ctx.log.info('found the delivery an earlier attempt created', { deliveryId: existing.id, attempt: ctx.info.attempt });
          return existing;
        }
      }
      const { delivery, replayed } = await provider.createDelivery(request, { idempotencyKey, signal: signal() });
      ctx.log.info('delivery created at the provider', { deliveryId: delivery.id, replayed });
      return delivery;
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
