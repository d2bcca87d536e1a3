export { approvalText, digestText, pushText } from './format.js';
export { canonicalPriorities, readPriorities } from './priorities.js';
export type { RetryOptions } from './retry-transformer.js';
export { retryTransformer } from './retry-transformer.js';
export { splitMessage, TELEGRAM_MESSAGE_LIMIT } from './split-message.js';
export type { BotState, ChatState, DigestEntry } from './state-file.js';
export { StateFile } from './state-file.js';
export type { DigestTimers, TelegramBotOptions } from './telegram-bot.js';
export {
  BOT_COMMANDS,
  CtxbusTelegramBot,
  DEFAULT_DIGEST_INTERVAL_MS,
  redactToken,
} from './telegram-bot.js';
