import type { ChannelRefusal, ConflictReport } from '@ctxbus/core';
import type { Context } from 'grammy';
import { Composer } from 'grammy';
import type { InlineKeyboardMarkup } from 'grammy/types';
import { approverRefusal } from './approvers.js';
import type { BotDeps } from './bot-deps.js';
import type { ButtonMessage } from './state-file.js';
import type { TapOutcome, Verdict } from './tap-decisions.js';
import { decideRequest, decideTask, keepValue } from './tap-decisions.js';

// Taps on the bot's buttons: Approve / Allow once / Deny (a:<id>, d:<id>) and Keep 1 / Keep 2
// (k1:<id>, k2:<id>). A tap counts only from an approver, on the message that carries the
// buttons for exactly that id, once at a time per id.

const CALLBACK = /^([ad]):(task_[0-9a-f-]{36}|[0-9a-f-]{36})$/;
/** Keep value 1 or 2 of conflict <id> (the values are read from the conflict on the tap). */
const KEEP_CALLBACK = /^k([12]):([0-9a-f-]{36})$/;

export function buttons(id: string, approveLabel: string): InlineKeyboardMarkup {
  return {
    inline_keyboard: [
      [
        { text: approveLabel, callback_data: `a:${id}` },
        { text: 'Deny', callback_data: `d:${id}` },
      ],
    ],
  };
}

/** One Keep button per value; the tap names the conflict and the value's place (k1, k2). */
export function keepButtons(id: string, report: ConflictReport): InlineKeyboardMarkup {
  return {
    inline_keyboard: [
      report.values.map((value, index) => ({
        text: `Keep ${index + 1}: ${value.runtime}`.slice(0, 60),
        callback_data: `k${index + 1}:${id}`,
      })),
    ],
  };
}

interface Taps extends BotDeps {
  /** The Telegram user ids whose taps count. */
  approvers: ReadonlySet<number>;
  /** The ids being decided now: a second tap meanwhile is told so. */
  inflight: Set<string>;
  /** Refusals already sent to the audit log (person, task, reason), the newest. */
  audited: Set<string>;
}

/** Refused taps remembered so that repeating one does not audit it again. */
const AUDITED_REFUSALS = 1_000;

/** A tap refused before anything was asked of the hub: why (for the audit log), and the answer. */
interface Refusal {
  reason: ChannelRefusal;
  text: string;
}

/** The tap handler; `approvers` are the Telegram user ids whose taps count. */
export function tapsComposer(deps: BotDeps, approvers: ReadonlySet<number>): Composer<Context> {
  const taps: Taps = { ...deps, approvers, inflight: new Set<string>(), audited: new Set() };
  const composer = new Composer<Context>();
  composer.on('callback_query:data', (ctx) => onTap(taps, ctx));
  return composer;
}

async function onTap(taps: Taps, ctx: Context): Promise<void> {
  const data = ctx.callbackQuery?.data ?? '';
  const keep = KEEP_CALLBACK.exec(data);
  if (keep) {
    await decide(taps, ctx, keep[2] ?? '', 'keep', (who) =>
      keepValue(taps, keep[2] ?? '', keep[1] === '1' ? 0 : 1, who, ctx.chat?.id),
    );
    return;
  }
  const match = CALLBACK.exec(data);
  if (!match) {
    await ctx.answerCallbackQuery({ text: 'Unknown button.' });
    return;
  }
  const verdict: Verdict = match[1] === 'a' ? 'approve' : 'deny';
  const id = match[2] ?? '';
  await decide(taps, ctx, id, verdict, (who, shown) =>
    id.startsWith('task_')
      ? decideTask(taps, id, verdict, who, ctx.chat?.id, shown.digest)
      : decideRequest(taps, id, verdict, who, ctx.chat?.id),
  );
}

/** Checks the tap (approver, button bound to this message), runs `work` once, answers. */
async function decide(
  taps: Taps,
  ctx: Context,
  id: string,
  verdict: Verdict | 'keep',
  work: (who: string, shown: ButtonMessage) => Promise<TapOutcome>,
): Promise<void> {
  // The user id always: a username can be changed or taken over by someone else.
  const who = ctx.from?.username
    ? `@${ctx.from.username} (user ${ctx.from.id})`
    : `user ${ctx.from?.id ?? '?'}`;
  const shown = buttonMessage(taps, ctx, id);
  if ('reason' in shown) {
    taps.logger.warn(
      { fromId: ctx.from?.id ?? null, chatId: ctx.chat?.id ?? null, id, verdict },
      `refused a tap: ${shown.text}`,
    );
    await auditRefusal(taps, ctx, id, verdict, shown);
    await ctx.answerCallbackQuery({ text: shown.text.slice(0, 200), show_alert: true });
    return;
  }
  if (taps.inflight.has(id)) {
    await ctx.answerCallbackQuery({ text: 'Already being decided.', show_alert: true });
    return;
  }
  taps.inflight.add(id);
  let outcome: TapOutcome;
  try {
    outcome = await work(who, shown);
  } catch (error) {
    taps.logger.error({ error: taps.redact(error), id }, 'decision failed');
    outcome = { applied: false, answer: `Not decided: ${taps.redact(error)}`, outcome: null };
  } finally {
    taps.inflight.delete(id);
  }
  if (outcome.refusal) {
    await auditRefusal(taps, ctx, id, verdict, { reason: outcome.refusal, text: outcome.answer });
  }
  await ctx.answerCallbackQuery({
    text: outcome.answer.slice(0, 200),
    show_alert: !outcome.applied,
  });
  const message = ctx.callbackQuery?.message;
  if (outcome.outcome !== null && message && 'text' in message) {
    await ctx
      .editMessageText(`${message.text ?? ''}\n\n${outcome.outcome}`.slice(0, 4_096), {
        reply_markup: { inline_keyboard: [] },
      })
      .catch((error: unknown) =>
        taps.logger.warn({ error: taps.redact(error) }, 'could not edit the message'),
      );
  }
  if (!outcome.applied && ctx.chat) await taps.reply(ctx, outcome.answer);
}

/**
 * The record of the message a tap on a button deciding `id` was made on, or why the tap does
 * not count: it must come from one of the bot's approvers (Telegram user ids, --approver), on a
 * message the bot sent with the buttons for exactly `id`.
 */
function buttonMessage(taps: Taps, ctx: Context, id: string): ButtonMessage | Refusal {
  const from = ctx.from?.id;
  const refused = approverRefusal(taps.approvers, from);
  if (refused === 'no_approver_configured') {
    return {
      reason: refused,
      text: 'Not decided: this bot has no approver configured (ctxbus telegram --approver USER_ID), so no tap decides anything.',
    };
  }
  if (refused === 'not_an_approver') {
    return {
      reason: refused,
      text: `Not decided: user ${from ?? '?'} is not one of this bot's approvers.`,
    };
  }
  const message = ctx.callbackQuery?.message;
  const chat = ctx.chat?.id;
  const shown =
    message === undefined || chat === undefined
      ? undefined
      : taps.state.buttonsOf(id, chat, message.message_id);
  return (
    shown ?? {
      reason: 'not_this_message',
      text: 'Not decided: this button does not belong to this message (it decides nothing here).',
    }
  );
}

/**
 * Puts a refused tap on a task's approval in the hub's audit log (approval.refused), once per
 * person, task, verdict and reason: who tried, in which chat, and why. Taps on request items and
 * conflicts decide no command and are only logged here. A hub that cannot be reached is logged:
 * the tap decided nothing either way.
 */
async function auditRefusal(
  taps: Taps,
  ctx: Context,
  id: string,
  verdict: Verdict | 'keep',
  refusal: Refusal,
): Promise<void> {
  if (verdict === 'keep' || !id.startsWith('task_')) return;
  // One record per distinct attempt: the same tap repeated on the same message counts once.
  const message = ctx.callbackQuery?.message?.message_id ?? '?';
  const key = `${ctx.from?.id ?? '?'}\n${ctx.chat?.id ?? '?'}\n${message}\n${id}\n${verdict}\n${refusal.reason}`;
  if (taps.audited.has(key)) return;
  taps.audited.add(key);
  for (const old of [...taps.audited].slice(0, Math.max(0, taps.audited.size - AUDITED_REFUSALS))) {
    taps.audited.delete(old);
  }
  const name = ctx.from?.username
    ? `@${ctx.from.username} (user ${ctx.from.id})`
    : `user ${ctx.from?.id ?? '?'}`;
  await taps.client
    .recordRefusedDecision(id, {
      decision: verdict,
      by: `Telegram ${name}${ctx.chat ? ` in chat ${ctx.chat.id}` : ''}`,
      reason: refusal.reason,
      message: refusal.text,
    })
    .catch((error: unknown) => {
      taps.audited.delete(key);
      taps.logger.warn({ error: taps.redact(error), id }, 'could not audit a refused tap');
    });
}
