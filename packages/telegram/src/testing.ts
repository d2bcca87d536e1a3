// `@ctxbus/telegram/testing`: the local Bot API server the bot's tests use, for other packages'
// tests and benchmarks (test/bench's `telegram` section).
export type {
  InjectedFailure,
  RecordedCall,
  SentMessage,
  TestBotApi,
} from './test-bot-api.js';
export { startTestBotApi } from './test-bot-api.js';
