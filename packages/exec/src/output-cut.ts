// Where command output may be cut so that no piece of a secret is left at the cut: at line
// breaks. The hub redacts what it stores (keys, tokens, passwords), but a pattern finds only a
// whole secret: a cut inside one (a tail starting mid-token, a head ending mid-token) would leave
// its rest, or its start, as plain text beside the cut. Secrets do not span lines, except private
// keys, whose BEGIN line is their pattern's anchor: a piece whose BEGIN line was cut away is
// dropped through its END line.

const LINE_BREAK = /[\r\n]/;
const KEY_END = /-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----/;

/**
 * What follows a cut before `text`: from its first whole line on ('' when it has none), past
 * the rest of a private key whose start was cut away.
 */
export function fromWholeLine(text: string): string {
  const first = text.search(LINE_BREAK);
  if (first < 0) return '';
  let rest = text.slice(first + 1);
  const end = KEY_END.exec(rest);
  if (end && !rest.slice(0, end.index).includes('-----BEGIN')) {
    rest = fromWholeLine(rest.slice(end.index + end[0].length));
  }
  return rest;
}

/** What precedes a cut after `text`: up to the end of its last whole line ('' when none). */
export function toWholeLine(text: string): string {
  const last = Math.max(text.lastIndexOf('\n'), text.lastIndexOf('\r'));
  return last < 0 ? '' : text.slice(0, last + 1);
}
