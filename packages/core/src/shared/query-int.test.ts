import { describe, expect, it } from 'vitest';
import { sequenceTextSchema } from '../items/api-schemas.js';
import { queryInt } from './query-int.js';

describe('queryInt', () => {
  const limit = queryInt(1, 200);

  it('takes digits and typed integers within its range', () => {
    expect(limit.parse('16')).toBe(16);
    expect(limit.parse('007')).toBe(7);
    expect(limit.parse(200)).toBe(200);
    expect(queryInt(0).parse('0')).toBe(0);
  });

  it('refuses what Number() would read as another number', () => {
    for (const text of ['0x10', ' 1', '1 ', '1e2', '1.0', '+1', '-1', '', 'NaN', 'Infinity']) {
      expect(limit.safeParse(text).success, text).toBe(false);
    }
    for (const value of [0, 201, 1.5, Number.NaN]) {
      expect(limit.safeParse(value).success, String(value)).toBe(false);
    }
    expect(limit.safeParse(['1', '2']).success).toBe(false);
  });
});

describe('sequenceTextSchema', () => {
  it('says one thing of text that is not digits', () => {
    const result = sequenceTextSchema.safeParse('abc');
    expect(result.success).toBe(false);
    expect(result.error?.issues.map((issue) => issue.message)).toEqual([
      'a sequence number is digits only',
    ]);
  });
});
