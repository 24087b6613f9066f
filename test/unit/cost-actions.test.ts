import { temporal } from '@temporalio/proto';
import { countActions } from '../../bench/cost';

const E = temporal.api.enums.v1.EventType;
const ev = (eventType: number, extra: object = {}, seconds = 100) => ({ eventType, eventTime: { seconds }, ...extra });
const la = (wftCompleted: number) => ev(E.EVENT_TYPE_MARKER_RECORDED, { markerRecordedEventAttributes: { markerName: 'core_local_activity', workflowTaskCompletedEventId: wftCompleted } });

describe('billable actions counted from a history (bench/cost.ts)', () => {
  it('follows Temporal Cloud: a start, each signal, each activity attempt, one per task for local activities, each timer, each upsert, each update', () => {
    const history = [
      ev(E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED),
      ev(E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED),
      la(4),
      la(4),
      la(4), // three local activities in one workflow task: one action
      ev(E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED),
      ev(E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED),
      ev(E.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES),
      ev(E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED),
      ev(E.EVENT_TYPE_ACTIVITY_TASK_STARTED, { activityTaskStartedEventAttributes: { attempt: 3 } }), // two retries: three attempts
      ev(E.EVENT_TYPE_TIMER_STARTED),
      ev(E.EVENT_TYPE_TIMER_CANCELED),
      la(12), // another task's local activity
      ev(E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED),
      ev(E.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED),
    ];
    expect(countActions(history as never)).toEqual({ 'workflow started': 1, signal: 2, 'activity attempt': 3, 'local activities': 2, timer: 1, 'search attributes': 1, update: 1, query: 0 });
  });

  it('counts only the events within a window (the gate\'s share of one run of the benchmark)', () => {
    const history = [ev(E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, {}, 10), ev(E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, {}, 100)];
    expect(countActions(history as never, (e) => Number(e.eventTime?.seconds) >= 50).signal).toBe(1);
  });
});
