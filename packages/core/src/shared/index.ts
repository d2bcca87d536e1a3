// Helpers every domain uses: typed errors, validation, canonical JSON and its hash, the logger
// type, backoff, the hub's defaults and limits, and the o200k token counter.
export { backoffDelay, createBackoff } from './backoff.js';
export { bearer } from './bearer.js';
export { hashValue, sha256Hex } from './canonical-hash.js';
export { canonicalJson } from './canonical-json.js';
export type { ErrorCode } from './errors.js';
export { CtxbusError, ERROR_CODES } from './errors.js';
export {
  DEFAULT_HUB_HOST,
  DEFAULT_HUB_PORT,
  DEFAULT_HUB_URL,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_MAX_STREAM_PENDING_BYTES,
  DEFAULT_MAX_STREAMS_PER_TEAM,
  DEFAULT_MAX_STREAMS_PER_TOKEN,
  MAX_BATCH_ITEMS,
} from './hub-limits.js';
export { hubUnreachable, serveCommand } from './hub-unreachable.js';
export type { Logger } from './logger.js';
export { silentLogger } from './logger.js';
export { sliceText } from './slice-text.js';
export {
  parseStrictJson,
  parseStrictJsonText,
  StrictJsonError,
  strictUtf8,
} from './strict-json.js';
export { countTokens, o200kTokenCounter } from './tokens.js';
export {
  MAX_JSON_DEPTH,
  parseOrThrow,
  shownIssues,
  tooDeep,
  validationError,
  wellFormed,
} from './validation.js';
export { shownJson, visibleText } from './visible-text.js';
