import type { ChannelRefusal, ContextItem, Task } from '@ctxbus/core';
import { CtxbusError, conflictOf } from '@ctxbus/core';
import { stableId } from '@ctxbus/core/light';
import type { BotDeps } from './bot-deps.js';

// What a counted tap does through the hub: a task's approval (exactly its command), a conflict's
// kept value, a request's feedback item. Each says what won when it lost a race.

export type Verdict = 'approve' | 'deny';

export interface TapOutcome {
  /** Whether this tap changed anything (false: stale, repeated, expired, unknown). */
  applied: boolean;
  /** Set when the tap was refused here, not by the hub: it goes to the audit log. */
  refusal?: ChannelRefusal;
  /** The short answer to the tap (answerCallbackQuery). */
  answer: string;
  /** The line the original message gets (its buttons go); null: leave the message. */
  outcome: string | null;
}

/**
 * Approves or denies exactly the command the tapped message showed (`shownDigest`): when the
 * task has since asked again for another command, the tap decides nothing (the newer message
 * does), and the hub refuses a digest that is not the one waiting.
 */
export async function decideTask(
  deps: BotDeps,
  id: string,
  verdict: Verdict,
  who: string,
  chatId: number | undefined,
  shownDigest: string | undefined,
): Promise<TapOutcome> {
  const { task } = await deps.client.task(id);
  const stale = staleTask(task);
  if (stale) return stale;
  if (shownDigest === undefined || task.approval?.request.digest !== shownDigest) {
    const line = 'Superseded: the task now asks about another command (see the newer message).';
    return {
      applied: false,
      answer: `${line} Nothing decided here.`,
      outcome: line,
      refusal: 'superseded',
    };
  }
  const expiresAt = task.approval?.expiresAt ?? '';
  if (Date.parse(expiresAt) <= deps.clock().getTime()) {
    return {
      applied: false,
      answer: `This approval expired at ${expiresAt}: nothing was approved.`,
      outcome: `Expired at ${expiresAt}: not approved.`,
    };
  }
  try {
    const decided = await deps.client.decideTask(id, verdict, {
      digest: shownDigest,
      note: `${verdict === 'approve' ? 'allowed once' : 'denied'} in Telegram by ${who}${chatId === undefined ? '' : ` (chat ${chatId})`}`,
    });
    const done = verdict === 'approve' ? 'Allowed once' : 'Denied';
    return {
      applied: true,
      answer: `${done}: ${decided.state === 'SUBMITTED' ? 'the worker may run it now' : `the task is ${decided.state}`}.`,
      outcome: `${done} by ${who}.`,
    };
  } catch (error) {
    // Decided or lapsed meanwhile (another chat, the CLI, the hub's sweep): say what won.
    if (CtxbusError.isInstance(error) && error.code === 'conflict') {
      const { task: now } = await deps.client.task(id);
      return (
        staleTask(now) ?? {
          applied: false,
          answer: `Not decided: ${error.message}`,
          outcome: null,
        }
      );
    }
    throw error;
  }
}

/** The item a button decides, or `gone` when the hub no longer has it (expired, removed). */
async function itemOrGone(
  deps: BotDeps,
  id: string,
  gone: TapOutcome,
): Promise<ContextItem | TapOutcome> {
  try {
    return await deps.client.get(id);
  } catch (error) {
    if (CtxbusError.isInstance(error) && error.code === 'not_found') return gone;
    throw error;
  }
}

/** Keeps value `index` (0: the older, 1: the newer) of conflict `id` through the hub. */
export async function keepValue(
  deps: BotDeps,
  id: string,
  index: 0 | 1,
  who: string,
  chatId: number | undefined,
): Promise<TapOutcome> {
  const gone = 'This conflict is gone (expired or removed): nothing kept.';
  const item = await itemOrGone(deps, id, { applied: false, answer: gone, outcome: gone });
  if (!('id' in item)) return item;
  const report = conflictOf(item);
  const value = report?.values[index];
  if (!report || !value) {
    return { applied: false, answer: 'Not a conflict: nothing kept.', outcome: null };
  }
  try {
    await deps.client.resolveConflict(id, {
      keep: value.id,
      note: `kept in Telegram by ${who}${chatId === undefined ? '' : ` (chat ${chatId})`}`,
    });
  } catch (error) {
    // Resolved elsewhere, or replaced by a newer conflict on the key: say so, keep nothing.
    if (CtxbusError.isInstance(error) && error.code === 'conflict') {
      const line = `Not kept: ${error.message}`;
      return { applied: false, answer: line, outcome: line };
    }
    throw error;
  }
  return {
    applied: true,
    answer: `Kept ${value.runtime}'s value of ${report.key}.`,
    outcome: `Kept ${value.runtime}'s value (${value.title}) by ${who}.`,
  };
}

export async function decideRequest(
  deps: BotDeps,
  id: string,
  verdict: Verdict,
  who: string,
  chatId: number | undefined,
): Promise<TapOutcome> {
  const request = await itemOrGone(deps, id, {
    applied: false,
    answer: 'This request is gone (expired or withdrawn): nothing recorded.',
    outcome: 'Gone: expired or withdrawn.',
  });
  if (!('id' in request)) return request;
  const word = verdict === 'approve' ? 'approved' : 'denied';
  // One feedback item per request (its id comes from the request's): a second tap, here or
  // in another chat, finds the first answer instead of recording another.
  const feedbackId = stableId('ctxbus-telegram-feedback', id);
  let earlier: ContextItem | null = null;
  try {
    const written = await deps.client.write({
      id: feedbackId,
      type: 'decision',
      title: `${verdict === 'approve' ? 'Approved' : 'Denied'}: ${request.title}`.slice(0, 300),
      content: `${who} ${word} the request "${request.title}" from ${request.source.runtime} in Telegram.`,
      relevanceTags: ['feedback', word],
      runtimeOptions: {
        telegram: { requestId: id, verdict: word, by: who, chatId: chatId ?? null },
      },
    });
    if (written.results[0]?.status === 'existing') earlier = written.items[0] ?? null;
  } catch (error) {
    // The same id with other content: someone answered first (another verdict or person).
    if (!CtxbusError.isInstance(error) || error.code !== 'conflict') throw error;
    earlier = await deps.client.get(feedbackId);
  }
  if (earlier) {
    const first = (earlier.runtimeOptions as { telegram?: { verdict?: string; by?: string } })
      .telegram;
    const by = first?.by ? ` by ${first.by}` : '';
    return {
      applied: false,
      answer: `Already ${first?.verdict ?? 'answered'}${by}: nothing changed.`,
      outcome: `${first?.verdict === 'approved' ? 'Approved' : 'Denied'}${by}.`,
    };
  }
  await deps.client.consume(id).catch(() => {});
  return {
    applied: true,
    answer: `${verdict === 'approve' ? 'Approved' : 'Denied'}: feedback recorded.`,
    outcome: `${verdict === 'approve' ? 'Approved' : 'Denied'} by ${who}.`,
  };
}

/** What a tap on a task no longer waiting for approval is told; null while it waits. */
function staleTask(task: Task): TapOutcome | null {
  const approval = task.approval;
  if (task.state === 'AUTH_REQUIRED' && approval?.status === 'pending') return null;
  if (approval?.status === 'approved') {
    const line = `Already approved by ${approval.decidedBy ?? '?'}.`;
    return { applied: false, answer: `${line} Nothing changed.`, outcome: line };
  }
  if (approval?.status === 'denied') {
    const line = `Already denied by ${approval.decidedBy ?? '?'}.`;
    return { applied: false, answer: `${line} Nothing changed.`, outcome: line };
  }
  if (approval?.status === 'expired' || task.error?.code === 'approval_expired') {
    const line = `Expired: nobody answered by ${approval?.expiresAt ?? 'the deadline'}; the task was ${task.state}.`;
    return { applied: false, answer: `${line} Nothing approved.`, outcome: line };
  }
  const line = `The task is ${task.state}: it waits for no approval.`;
  return { applied: false, answer: line, outcome: line };
}
