import { describe, expect, it } from 'vitest';
import { parseStrictJson, parseStrictJsonText, StrictJsonError } from './strict-json.js';

const bytes = (text: string) => new TextEncoder().encode(text);

function refusal(run: () => unknown): StrictJsonError {
  try {
    run();
  } catch (error) {
    if (error instanceof StrictJsonError) return error;
    throw error;
  }
  throw new Error('not refused');
}

describe('parseStrictJson', () => {
  it('parses what JSON.parse parses when nothing would change', () => {
    const text = JSON.stringify({
      a: [{ b: 1, c: '{"b": 2, "b": 3}' }, { b: 2 }],
      'quote"d': 'x\\',
      e: { f: { g: [1, [2, { h: null }]] } },
      text: 'a "__proto__" inside a string, and "a": "a"',
    });
    expect(parseStrictJson(bytes(text))).toEqual(JSON.parse(text));
    expect(parseStrictJson(bytes('\uFEFF{"a":1}'))).toEqual({ a: 1 });
    expect(parseStrictJsonText('[1, "x", {"a": {}, "b": []}]')).toEqual([1, 'x', { a: {}, b: [] }]);
    // The same key in sibling objects, and in an object and its parent, is no duplicate.
    expect(parseStrictJsonText('[{"a":1},{"a":2}]')).toEqual([{ a: 1 }, { a: 2 }]);
    expect(parseStrictJsonText('{"a":{"a":1},"b":{"a":2}}')).toEqual({ a: { a: 1 }, b: { a: 2 } });
    expect(parseStrictJsonText('{"x":"\\\\","y":"\\""}')).toEqual({ x: '\\', y: '"' });
  });

  it('refuses bytes that are not UTF-8, instead of storing U+FFFD', () => {
    const body = new Uint8Array([...bytes('{"title":"bad '), 0xff, 0xfe, ...bytes('"}')]);
    expect(refusal(() => parseStrictJson(body))).toMatchObject({
      reason: 'not_utf8',
      message: 'the request body is not valid UTF-8: send JSON encoded as UTF-8',
    });
  });

  it('refuses a key given twice in one object, instead of keeping the last', () => {
    const twice = refusal(() => parseStrictJsonText('{"title":"a","x":[1,{"y":2}],"title":"b"}'));
    expect(twice.reason).toBe('duplicate_key');
    expect(twice.message).toMatch(/has the key "title" twice in one object \(at character 29\)/);
    // Escapes spell the same key.
    expect(refusal(() => parseStrictJsonText('{"ab":1,"\\u0061b":2}')).reason).toBe(
      'duplicate_key',
    );
    expect(refusal(() => parseStrictJsonText('[{"a":{"k":1,"k":2}}]')).reason).toBe(
      'duplicate_key',
    );
  });

  it('refuses a "__proto__" key, however escaped, instead of dropping it', () => {
    for (const text of [
      '{"__proto__":{"a":1}}',
      '{"ok":{"__proto__":1}}',
      '[{"\\u005f_proto__":1}]',
      '{"b":2, "__pro\\u0074o__":[]}',
    ]) {
      expect(refusal(() => parseStrictJsonText(text)).reason, text).toBe('proto_key');
    }
  });

  it('says what is not JSON', () => {
    expect(refusal(() => parseStrictJsonText('{"a":'))).toMatchObject({
      reason: 'not_json',
      message: expect.stringMatching(/^the request body is not valid JSON: /),
    });
  });
});
