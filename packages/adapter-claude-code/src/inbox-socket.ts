import { connect } from 'node:net';

// Claude Code's per-session inbox (cross-session messaging, read from its 2.1.3xx code and
// checked with the real CLI): a Unix socket at $CLAUDE_CODE_MESSAGING_SOCKET that reads JSON
// lines. An optional first line `{"type":"auth","token":$CLAUDE_CODE_MESSAGING_TOKEN}`, then
// `{"type":"user","message":{"role":"user","content":"..."},"session_id":"..."}`: Claude Code
// queues the content (priority "next": between tool calls, or a new turn when idle) unless its
// `crossSessionInbound` setting holds or refuses it, and drops a line whose session_id is not
// its session's (a socket path reused by a later process). It answers nothing on the socket.

/** Where one session's inbox is. */
export interface InboxTarget {
  /** The socket path ($CLAUDE_CODE_MESSAGING_SOCKET). */
  socket: string;
  /** $CLAUDE_CODE_MESSAGING_TOKEN, when the session has one. */
  token?: string;
  /** The session the line is for; Claude Code drops it in any other session. */
  sessionId: string;
}

/** Written to the inbox; the session is gone (no socket, refused); or it failed otherwise. */
export type InboxOutcome = 'delivered' | 'gone' | 'failed';

const GONE = new Set(['ENOENT', 'ECONNREFUSED', 'ENOTSOCK']);

/** The lines that deliver `text` to the session (the auth line first when there is a token). */
export function inboxLines(target: InboxTarget, text: string): string {
  const lines = [
    ...(target.token ? [{ type: 'auth', token: target.token }] : []),
    {
      type: 'user',
      message: { role: 'user', content: text },
      session_id: target.sessionId,
      priority: 'next',
    },
  ];
  return lines.map((line) => `${JSON.stringify(line)}\n`).join('');
}

/**
 * Writes `text` into the session's inbox and waits for Claude Code to close the connection
 * (it reads to the end first); never throws.
 */
export function sendToInbox(
  target: InboxTarget,
  text: string,
  timeoutMs = 2_000,
): Promise<InboxOutcome> {
  return new Promise((resolve) => {
    let written = false;
    let settled = false;
    const done = (outcome: InboxOutcome) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      resolve(outcome);
    };
    const socket = connect({ path: target.socket });
    socket.setTimeout(timeoutMs, () => done(written ? 'delivered' : 'failed'));
    socket.on('error', (error: NodeJS.ErrnoException) =>
      done(GONE.has(error.code ?? '') ? 'gone' : written ? 'delivered' : 'failed'),
    );
    socket.on('connect', () => {
      socket.end(inboxLines(target, text), () => {
        written = true;
      });
    });
    socket.resume();
    socket.on('close', () => done(written ? 'delivered' : 'failed'));
  });
}
