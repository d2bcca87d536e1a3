import { createClient } from '@ctxbus/client';
import { CtxbusError } from '@ctxbus/core/light';
import { pino } from 'pino';
import { configDir } from '../credentials.js';
import { hubUrl, ownRuntimeToken } from '../hub-target.js';

export interface TelegramFlags {
  url?: string;
  token?: string;
  chat?: string[];
  approver?: string[];
  state?: string;
  digestInterval: string;
  sharedContextDir?: string;
  apiRoot?: string;
  webhookUrl?: string;
  webhookSecret?: string;
  webhookHost: string;
  webhookPort: string;
}

/** Chat ids from --chat (repeatable, commas too) or $CTXBUS_TELEGRAM_CHATS. */
export function parseChats(flags: string[] | undefined, env: string | undefined): number[] {
  const raw = (flags && flags.length > 0 ? flags.join(',') : (env ?? '')).split(/[\s,]+/);
  const chats: number[] = [];
  for (const value of raw.filter(Boolean)) {
    if (!/^-?\d{1,20}$/.test(value) || !Number.isSafeInteger(Number(value))) {
      throw new CtxbusError(
        'validation_failed',
        `--chat takes a numeric Telegram chat id such as 123456789 or -1001234567890 (got "${value}")`,
      );
    }
    chats.push(Number(value));
  }
  if (chats.length === 0) {
    throw new CtxbusError(
      'validation_failed',
      'no chat to serve: pass --chat <id> (repeatable) or set CTXBUS_TELEGRAM_CHATS=id,id',
    );
  }
  return [...new Set(chats)];
}

/**
 * Telegram user ids from --approver (repeatable, commas too) or $CTXBUS_TELEGRAM_APPROVERS:
 * the people whose taps on Approve / Deny count. None is allowed (every tap is then refused).
 */
export function parseApprovers(flags: string[] | undefined, env: string | undefined): number[] {
  const raw = (flags && flags.length > 0 ? flags.join(',') : (env ?? '')).split(/[\s,]+/);
  const approvers: number[] = [];
  for (const value of raw.filter(Boolean)) {
    if (!/^\d{1,20}$/.test(value) || !Number.isSafeInteger(Number(value))) {
      throw new CtxbusError(
        'validation_failed',
        `--approver takes a numeric Telegram user id such as 123456789 (got "${value}")`,
      );
    }
    approvers.push(Number(value));
  }
  return [...new Set(approvers)];
}

// For the command's actions, which import this module when they run.
export { configDir, createClient, hubUrl, ownRuntimeToken, pino };
