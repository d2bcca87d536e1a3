/**
 * `text` with what a reader cannot see shown as escapes (`\x1b`, `\u202e`): C0 and C1 controls
 * (but tab and line feed), zero-width characters and direction marks, bidi overrides and
 * isolates. An agent's words shown to a person (an approval's command, a task's title) can then
 * neither hide part of themselves nor reorder what comes after them.
 */
export function visibleText(text: string): string {
  return text.replace(
    // biome-ignore lint/suspicious/noControlCharactersInRegex: finding them is the point
    /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g,
    (char) => {
      const code = char.charCodeAt(0);
      return code < 0x100
        ? `\\x${code.toString(16).padStart(2, '0')}`
        : `\\u${code.toString(16).padStart(4, '0')}`;
    },
  );
}
