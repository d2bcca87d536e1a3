import type { LiveSession } from '@ctxbus/client';
import { LIVE_TEXT_CHARS, liveText, shouldPush } from '@ctxbus/client';
import type { ContextItem } from '@ctxbus/core/contract';
import { LIVE_PUSH_HEADER } from './live-start.js';

// What the live push (`ctxbus install claude-code --live`) sends into a running Claude Code
// session's inbox. Claude Code (2.1.224 and later) binds a Unix socket per session
// (`CLAUDE_CODE_MESSAGING_SOCKET`): a line `{"type":"user","message":{...}}` there is queued as
// a cross-session message and reaches the model between the tool calls of a busy turn, or
// starts a turn in an idle session. Claude Code frames it as a message from another session;
// the text frames the item again as data from a named runtime, never as instructions, and a
// pending approval as something only a person answers. Which items are pushed, and that
// framing, are @ctxbus/client's live-push rule, shared with the OpenClaw plugin.

export type { LiveSession };
export { LIVE_TEXT_CHARS, shouldPush };

/** The message the session receives for an item: the live push header, then the item. */
export function liveMessage(item: ContextItem, self: LiveSession): string {
  return liveText(item, self, {
    header: LIVE_PUSH_HEADER,
    readHint: 'mcp__ctxbus__context_read',
  });
}
