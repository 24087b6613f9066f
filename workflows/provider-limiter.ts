/**
 * The provider limiter: one long-running workflow per call family (creations, quotes) that
 * hands out window-exact slots to delivery workflows (see slot-window.ts for the rule). It holds
 * the backlog, in order, food first, and the recent quotes that identical orders may share.
 *
 * Every limit is held here for all workers together, by Temporal: the state is durable, a
 * crashed worker loses nothing, and time comes from Temporal timers. The history stays bounded
 * by continuing as new with the whole state.
 */
import { condition, continueAsNew, getExternalWorkflowHandle, patched, setCurrentDetails, setHandler, workflowInfo } from '@temporalio/workflow';
import { slotMessages } from './dispatch';
import {
  limiterStatusQuery,
  providerBackSignal,
  requesterFromId,
  slotAnsweredSignal,
  slotReleasedSignal,
  slotRequestedSignal,
  slotWithdrawnSignal,
  type LimiterInput,
} from './limiter-messages';
import { SlotWindow, type SlotAnswer } from './slot-window';

/** Continue as new well before Temporal's limits (signals per run, history size). */
const LIMITER_HISTORY_LIMIT = 5_000;

export async function providerLimiter(input: LimiterInput): Promise<never> {
  const window = input.resume ? new SlotWindow(input.resume) : SlotWindow.empty(input.config);
  const outbox: SlotAnswer[] = [];
  let changed = true;

  // Limiters started before other families were told of the provider's return neither tell nor
  // listen. Decided in the run's first task, before any handler runs (docs/operations.md).
  const sharesProviderBack = patched('provider-back-shared');

  const now = () => Date.now();
  const send = (answers: SlotAnswer[]) => {
    outbox.push(...answers);
    changed = true;
  };

  setHandler(slotRequestedSignal, ({ config, ...req }) => {
    window.configure(config);
    send(window.request(req, now()));
  });
  /** This family's outage probe was answered: the other families' limiters are told once the answers are out. */
  let providerBack = false;
  setHandler(slotReleasedSignal, (rel) => {
    const probing = window.s.pause.probing;
    send(window.release(rel, now()));
    providerBack ||= probing && !window.s.pause.probing;
  });
  setHandler(providerBackSignal, () => {
    if (!sharesProviderBack) return;
    window.providerBack(now());
    changed = true;
  });
  setHandler(slotWithdrawnSignal, (requestId) => send(window.withdraw(requestId, now())));
  setHandler(limiterStatusQuery, () => ({
    family: input.family,
    config: window.s.config,
    waiting: window.s.waiting.length + window.s.followers.length,
    waitingFood: window.s.waiting.filter((r) => r.food).length,
    held: window.s.held.length,
    free: Math.max(0, window.free(now())),
    pausedForMs: Math.max(0, window.s.pause.until - now()),
    probing: window.s.pause.probing,
    counts: window.s.counts,
  }));

  /** Answers on their way: not awaited one by one (that would cost a workflow task per batch). */
  const sending = new Set<Promise<void>>();
  const track = (p: Promise<void>) => {
    const tracked = p.finally(() => sending.delete(tracked));
    sending.add(tracked);
  };
  // Limiters started before answers went out by activity keep signalling with commands.
  const byActivity = patched('answers-by-activity');
  const deliver = (batch: SlotAnswer[]) => {
    if (batch.length === 0) return;
    if (byActivity) {
      // The requester is gone (terminated or ended): nobody will use this slot.
      return track(slotMessages.sendSlotAnswers(batch).then((gone) => gone.forEach((id) => send(window.undeliverable(id, now())))));
    }
    for (const answer of batch) {
      track(
        getExternalWorkflowHandle(requesterFromId(answer.requestId))
          .signal(slotAnsweredSignal, answer)
          .catch(() => send(window.undeliverable(answer.requestId, now()))),
      );
    }
  };

  for (;;) {
    changed = false;
    for (const g of window.grant(now())) outbox.push({ requestId: g.requestId, slot: true, notBefore: g.notBefore });
    deliver(outbox.splice(0));
    if (providerBack && sharesProviderBack) track(slotMessages.announceProviderBack({ limiterId: workflowInfo().workflowId, family: input.family }));
    providerBack = false;
    setCurrentDetails(
      `**${input.family}**: ${window.s.config.limit} per ${window.s.config.windowMs / 1000} s · ${window.s.held.length} held · ` +
        `${window.s.waiting.length + window.s.followers.length} waiting · ${window.s.counts.granted} granted · ${window.s.counts.reused} quotes reused`,
    );
    if (workflowInfo().continueAsNewSuggested || workflowInfo().historyLength >= LIMITER_HISTORY_LIMIT) {
      // Every answer must have gone out before this run ends; ones that failed change the state.
      while (sending.size > 0) await Promise.all([...sending]);
      if (outbox.length > 0 || changed) continue;
      return continueAsNew<typeof providerLimiter>({ family: input.family, config: window.s.config, resume: window.s });
    }
    const next = window.nextChangeAt(now());
    if (next === undefined) await condition(() => changed);
    else await condition(() => changed, Math.max(1, next - now()));
  }
}
