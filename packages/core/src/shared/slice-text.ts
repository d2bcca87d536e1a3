/**
 * The first `length` UTF-16 units of `text`, one fewer when the cut would split a surrogate
 * pair: a cut text stays well-formed (a lone surrogate is refused by strict JSON parsers).
 */
export function sliceText(text: string, length: number): string {
  if (text.length <= length) return text;
  if (length <= 0) return '';
  const last = text.charCodeAt(length - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? length - 1 : length);
}
