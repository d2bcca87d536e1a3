// A request body as JSON, strictly: what JSON.parse would take silently and change is refused.
// JSON.parse replaces bytes that are not UTF-8 with U+FFFD, keeps the last of two equal keys in
// one object, and takes a "__proto__" key, which every object copy in the hub (schemas,
// spreads) then turns into the object's prototype: each was stored as something other than
// what the client sent, without a word.

/** Why a body is not taken: said to the client as is. */
export class StrictJsonError extends Error {
  constructor(
    message: string,
    readonly reason: 'not_utf8' | 'not_json' | 'duplicate_key' | 'proto_key',
  ) {
    super(message);
    this.name = 'StrictJsonError';
  }
}

// The WHATWG decoder, a global in Node and in browsers (core's lib, ES2024, does not declare it).
declare const TextDecoder: new (
  label: 'utf-8',
  options: { fatal: boolean },
) => { decode(bytes: Uint8Array): string };

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** `bytes` as text, refused unless they are UTF-8 (a leading BOM is dropped). */
export function strictUtf8(bytes: Uint8Array, what = 'the request body'): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new StrictJsonError(`${what} is not valid UTF-8: send JSON encoded as UTF-8`, 'not_utf8');
  }
}

/** Decodes `bytes` as UTF-8 and parses them as strict JSON. */
export function parseStrictJson(bytes: Uint8Array, what = 'the request body'): unknown {
  return parseStrictJsonText(strictUtf8(bytes, what), what);
}

/** Parses `text` as JSON, refusing a key given twice in one object and a "__proto__" key. */
export function parseStrictJsonText(text: string, what = 'the request body'): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new StrictJsonError(`${what} is not valid JSON: ${(error as Error).message}`, 'not_json');
  }
  if (text.includes('{')) checkKeys(text, what);
  return value;
}

/** Where a string that starts at `start` (its opening quote) ends (its closing quote). */
function stringEnd(text: string, start: number): number {
  for (let at = start + 1; ; ) {
    const quote = text.indexOf('"', at);
    let slashes = 0;
    while (text.charCodeAt(quote - 1 - slashes) === 92) slashes += 1;
    if (slashes % 2 === 0) return quote;
    at = quote + 1;
  }
}

/**
 * Walks valid JSON text once, keeping each open object's keys: a key seen twice in one object,
 * or a "__proto__" key (however escaped), is refused.
 */
function checkKeys(text: string, what: string): void {
  // One entry per open object or array: the object's keys, or null for an array.
  const open: (Set<string> | null)[] = [];
  let expectKey = false;
  for (let at = 0; at < text.length; at += 1) {
    const code = text.charCodeAt(at);
    if (code === 34) {
      const end = stringEnd(text, at);
      const keys = open.at(-1);
      if (expectKey && keys) {
        const raw = text.slice(at + 1, end);
        const key = raw.includes('\\') ? (JSON.parse(text.slice(at, end + 1)) as string) : raw;
        if (key === '__proto__') {
          throw new StrictJsonError(
            `${what} has a "__proto__" key (at character ${at}), which cannot be kept as data: rename it`,
            'proto_key',
          );
        }
        if (keys.has(key)) {
          throw new StrictJsonError(
            `${what} has the key ${JSON.stringify(key)} twice in one object (at character ${at}): send each key once`,
            'duplicate_key',
          );
        }
        keys.add(key);
        expectKey = false;
      }
      at = end;
    } else if (code === 123) {
      open.push(new Set());
      expectKey = true;
    } else if (code === 91) {
      open.push(null);
      expectKey = false;
    } else if (code === 125 || code === 93) {
      open.pop();
      expectKey = false;
    } else if (code === 44) {
      expectKey = open.at(-1) != null;
    }
  }
}
