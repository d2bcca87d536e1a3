// What Claude Code sends a command hook on stdin (the fields we use; others are ignored).
// Checked by hand rather than with zod: a hook runs on every prompt, and loading zod alone
// costs ~50 ms of Node startup (measured), more than everything else the hook does.

interface Base {
  session_id: string;
  cwd: string;
}

export type HookInput =
  | (Base & { hook_event_name: 'SessionStart'; source: string })
  | (Base & { hook_event_name: 'UserPromptSubmit'; prompt: string })
  | (Base & {
      hook_event_name: 'PostToolUse';
      tool_name: string;
      tool_input: Record<string, unknown>;
      /** The tool's result (a string, or an object per tool: Bash's stdout and stderr, ...). */
      tool_response: unknown;
    })
  | (Base & { hook_event_name: 'Stop'; last_assistant_message: string })
  | (Base & { hook_event_name: 'SessionEnd'; reason: string });

export type HookEvent = HookInput['hook_event_name'];
export const HOOK_EVENTS: readonly HookEvent[] = [
  'SessionStart',
  'UserPromptSubmit',
  'PostToolUse',
  'Stop',
  'SessionEnd',
];

const text = (value: unknown, fallback = ''): string =>
  typeof value === 'string' ? value : fallback;

/** The hook input, or null when it is not an event this hook handles. */
export function parseHookInput(value: unknown): HookInput | null {
  if (value === null || typeof value !== 'object') return null;
  const raw = value as Record<string, unknown>;
  const sessionId = text(raw.session_id);
  if (sessionId === '') return null;
  const base = { session_id: sessionId, cwd: text(raw.cwd) };
  switch (raw.hook_event_name) {
    case 'SessionStart':
      return { ...base, hook_event_name: 'SessionStart', source: text(raw.source, 'startup') };
    case 'UserPromptSubmit':
      return { ...base, hook_event_name: 'UserPromptSubmit', prompt: text(raw.prompt) };
    case 'PostToolUse': {
      const input = raw.tool_input;
      return {
        ...base,
        hook_event_name: 'PostToolUse',
        tool_name: text(raw.tool_name),
        tool_input:
          input !== null && typeof input === 'object' ? (input as Record<string, unknown>) : {},
        tool_response: raw.tool_response,
      };
    }
    case 'Stop':
      return {
        ...base,
        hook_event_name: 'Stop',
        last_assistant_message: text(raw.last_assistant_message),
      };
    case 'SessionEnd':
      return { ...base, hook_event_name: 'SessionEnd', reason: text(raw.reason, 'other') };
    default:
      return null;
  }
}
