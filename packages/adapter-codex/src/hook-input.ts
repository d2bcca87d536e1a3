// What Codex sends a command hook on stdin (codex-rs/hooks/schema/generated/*.command.input,
// seen from the real `codex exec` 0.171.0): the fields we use; the others are ignored.
// Checked by hand rather than with zod: a hook runs on every prompt, and zod costs startup.

interface Base {
  session_id: string;
  cwd: string;
}

/** Turn-scoped events carry Codex's turn id. */
interface TurnBase extends Base {
  turn_id: string;
}

export type CodexHookInput =
  | (Base & { hook_event_name: 'SessionStart'; source: string })
  | (TurnBase & { hook_event_name: 'UserPromptSubmit'; prompt: string })
  | (TurnBase & {
      hook_event_name: 'PostToolUse';
      tool_name: string;
      tool_use_id: string;
      tool_input: unknown;
      tool_response: unknown;
    })
  | (TurnBase & { hook_event_name: 'Stop'; last_assistant_message: string });

export type CodexHookEvent = CodexHookInput['hook_event_name'];

const text = (value: unknown, fallback = ''): string =>
  typeof value === 'string' ? value : fallback;

/** The hook input, or null when it is not an event this hook handles. */
export function parseCodexHookInput(value: unknown): CodexHookInput | null {
  if (value === null || typeof value !== 'object') return null;
  const raw = value as Record<string, unknown>;
  const sessionId = text(raw.session_id);
  if (sessionId === '') return null;
  const base = { session_id: sessionId, cwd: text(raw.cwd) };
  const turn = { ...base, turn_id: text(raw.turn_id) };
  switch (raw.hook_event_name) {
    case 'SessionStart':
      return { ...base, hook_event_name: 'SessionStart', source: text(raw.source, 'startup') };
    case 'UserPromptSubmit':
      return { ...turn, hook_event_name: 'UserPromptSubmit', prompt: text(raw.prompt) };
    case 'PostToolUse':
      return {
        ...turn,
        hook_event_name: 'PostToolUse',
        tool_name: text(raw.tool_name),
        tool_use_id: text(raw.tool_use_id),
        tool_input: raw.tool_input,
        tool_response: raw.tool_response,
      };
    case 'Stop':
      // Codex sends null when the turn ended without a message.
      return {
        ...turn,
        hook_event_name: 'Stop',
        last_assistant_message: text(raw.last_assistant_message),
      };
    default:
      return null;
  }
}
