/**
 * `text` with what a reader cannot see, or sees as something else, shown as escapes (`\x1b`,
 * `\u202e`): C0 and C1 controls (but tab and line feed), every format character (zero-width
 * characters, direction marks, bidi overrides and isolates, the soft hyphen, word joiners, tag
 * characters), the line and paragraph separators (U+2028, U+2029: a line break to many
 * readers, so a fake line could follow), and the blank Hangul fillers. An agent's words shown to
 * a person (an approval's command, a task's title) can then neither hide part of themselves nor
 * reorder what comes after them, nor add a line of their own.
 */
export function visibleText(text: string): string {
  return text.replace(
    // biome-ignore lint/suspicious/noControlCharactersInRegex: finding them is the point
    /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\p{Cf}\u2028\u2029\u115f\u1160\u3164\uffa0]/gu,
    (char) => {
      const code = char.codePointAt(0) ?? 0;
      if (code < 0x100) return `\\x${code.toString(16).padStart(2, '0')}`;
      if (code < 0x10000) return `\\u${code.toString(16).padStart(4, '0')}`;
      return `\\u{${code.toString(16)}}`;
    },
  );
}

/**
 * A value as a person checks it before approving it (a command's argv, its directory): quoted
 * as JSON, so argument boundaries, spaces and line breaks show, with every character outside
 * printable ASCII escaped (`\u034f`, `\u057d`): an invisible mark or a letter of another
 * script that looks like a Latin one cannot make one command look like another.
 */
export function shownJson(value: unknown): string {
  return (JSON.stringify(value) ?? 'null').replace(/[^\x20-\x7e]/gu, (char) => {
    const code = char.codePointAt(0) ?? 0;
    return code < 0x10000
      ? `\\u${code.toString(16).padStart(4, '0')}`
      : `\\u{${code.toString(16)}}`;
  });
}
