import { ApplicationFailure } from '@temporalio/common';
import { toApplicationFailure } from '../../activities/failures';
import { ConflictError, ProviderUnavailableError, RateLimitedError, UnauthorizedError, ValidationError } from '../../provider/errors';

describe('provider errors as Temporal failures', () => {
  it('makes a 429 retry after exactly the provider\'s Retry-After', () => {
    const f = toApplicationFailure(new RateLimitedError('POST /v1/deliveries: slow down', 17_000, { status: 429 })) as ApplicationFailure;
    expect(f).toBeInstanceOf(ApplicationFailure);
    expect(f).toMatchObject({ type: 'ProviderRateLimited', nonRetryable: false, nextRetryDelay: 17_000 });
  });

  it.each([
    [new UnauthorizedError('401'), 'ProviderUnauthorized'],
    [new ValidationError('422', { details: [{ field: 'is_food', message: 'required' }] }), 'ProviderValidation'],
    [new ConflictError('409'), 'ProviderConflict'],
  ])('marks %s as non-retryable (%s)', (err, type) => {
    expect(toApplicationFailure(err)).toMatchObject({ type, nonRetryable: true });
  });

  it('lets an unavailable provider be retried with backoff', () => {
    expect(toApplicationFailure(new ProviderUnavailableError('503'))).toMatchObject({ type: 'ProviderUnavailable', nonRetryable: false, nextRetryDelay: undefined });
  });

  it('carries the field details but leaves other errors untouched', () => {
    const f = toApplicationFailure(new ValidationError('422', { status: 422, code: 'validation_failed', details: [{ field: 'is_food', message: 'required' }] })) as ApplicationFailure;
    expect(f.details).toEqual([{ status: 422, code: 'validation_failed', fields: [{ field: 'is_food', message: 'required' }] }]);
    const plain = new Error('bug');
    expect(toApplicationFailure(plain)).toBe(plain);
  });
});
