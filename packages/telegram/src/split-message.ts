// Telegram refuses a message over 4,096 characters. Long texts are cut into messages at line
// boundaries; a line too long for one message is cut between words; a word too long (a URL,
// a hash) is cut between code points, never inside a surrogate pair. The bot sends plain text
// (no parse_mode), so no markup entity can be cut in half.

/** Telegram's limit on one message's text (UTF-16 code units, as Telegram counts). */
export const TELEGRAM_MESSAGE_LIMIT = 4_096;

function cutWord(word: string, limit: number): string[] {
  const pieces: string[] = [];
  let current = '';
  for (const codePoint of word) {
    if (current.length + codePoint.length > limit) {
      pieces.push(current);
      current = '';
    }
    current += codePoint;
  }
  if (current) pieces.push(current);
  return pieces;
}

function cutLine(line: string, limit: number): string[] {
  const pieces: string[] = [];
  let current = '';
  for (const word of line.split(/(?<= )/)) {
    if (current.length + word.length <= limit) {
      current += word;
      continue;
    }
    if (current.trimEnd()) pieces.push(current.trimEnd());
    current = '';
    if (word.length <= limit) {
      current = word;
    } else {
      const cut = cutWord(word, limit);
      current = cut.pop() ?? '';
      pieces.push(...cut);
    }
  }
  if (current.trimEnd()) pieces.push(current.trimEnd());
  return pieces;
}

/** Cuts `text` into messages of at most `limit` characters each, at the cleanest boundary. */
export function splitMessage(text: string, limit = TELEGRAM_MESSAGE_LIMIT): string[] {
  const messages: string[] = [];
  let current: string[] = [];
  let length = 0;
  const flush = () => {
    const joined = current.join('\n').trim();
    if (joined) messages.push(joined);
    current = [];
    length = 0;
  };
  for (const line of text.replace(/\r\n/g, '\n').split('\n')) {
    const pieces = line.length <= limit ? [line] : cutLine(line, limit);
    for (const piece of pieces) {
      const added = (current.length > 0 ? 1 : 0) + piece.length;
      if (length + added > limit) flush();
      length += (current.length > 0 ? 1 : 0) + piece.length;
      current.push(piece);
    }
  }
  flush();
  return messages;
}
