// What hooks and light clients need, without zod or the tokenizer: they run once per hook
// call, so every module they load is paid at each start. The contract entry re-exports it all.
export { canonicalJson } from './canonical-json.js';
export { extractDecisions, stableId } from './decision-capture.js';
export {
  DEFAULT_HUB_HOST,
  DEFAULT_HUB_PORT,
  DEFAULT_HUB_URL,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_MAX_STREAM_PENDING_BYTES,
  MAX_BATCH_ITEMS,
} from './hub-limits.js';
export type { Logger } from './logger.js';
export { silentLogger } from './logger.js';
