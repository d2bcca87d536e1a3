// Who decides through the bot: only the Telegram user ids it was started with (--approver).
// Taps on approval and conflict buttons, and /decide, follow this one rule.

/** Why a person's decision does not count, by code. */
export type ApproverRefusal = 'no_approver_configured' | 'not_an_approver';

/** Why Telegram user `from` may not decide through this bot, or null when it may. */
export function approverRefusal(
  approvers: ReadonlySet<number>,
  from: number | undefined,
): ApproverRefusal | null {
  if (approvers.size === 0) return 'no_approver_configured';
  if (from === undefined || !approvers.has(from)) return 'not_an_approver';
  return null;
}
