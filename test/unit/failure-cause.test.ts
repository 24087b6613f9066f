import { ActivityFailure, ApplicationFailure, ChildWorkflowFailure, RetryState, TimeoutFailure } from '@temporalio/common';
import { WorkflowFailedError } from '@temporalio/client';
import { applicationFailureIn, failureTypeIn, reasonOf } from '../../contract/failure-cause';

const conflict = () => ApplicationFailure.create({ type: 'ProviderConflict', message: 'already picked up', nonRetryable: true });
const inActivity = (cause: Error) => new ActivityFailure('activity failed', 'cancelDelivery', '1', RetryState.NON_RETRYABLE_FAILURE, 'worker', cause);

describe('the reason behind a Temporal failure', () => {
  it('finds the provider\'s failure behind an activity and behind a failed workflow', () => {
    expect(failureTypeIn(inActivity(conflict()))).toBe('ProviderConflict');
    const child = new ChildWorkflowFailure('default', { workflowId: 'delivery:A-1', runId: 'r' }, 'delivery', RetryState.NON_RETRYABLE_FAILURE, inActivity(conflict()));
    const failed = new WorkflowFailedError('workflow failed', child, RetryState.NON_RETRYABLE_FAILURE);
    expect(applicationFailureIn(failed)?.message).toBe('already picked up');
    expect(reasonOf(failed)?.message).toBe('already picked up');
  });

  it('takes a thrown ApplicationFailure itself', () => {
    const f = conflict();
    expect(applicationFailureIn(f)).toBe(f);
  });

  it('names the innermost cause when no ApplicationFailure was thrown, and no type', () => {
    const timeout = new TimeoutFailure('activity StartToClose timeout', undefined, 'START_TO_CLOSE');
    expect(failureTypeIn(inActivity(timeout))).toBeUndefined();
    expect(reasonOf(inActivity(timeout))).toBe(timeout);
  });

  it('answers nothing for nothing, and for what is not an error', () => {
    expect(applicationFailureIn(undefined)).toBeUndefined();
    expect(reasonOf(undefined)).toBeUndefined();
    expect(reasonOf('a string')).toBeUndefined();
  });
});
