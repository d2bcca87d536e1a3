import { describe, expect, it } from 'vitest';
import { portableSchema } from './portable-schema.js';

describe('portableSchema', () => {
  it('splits nullable type arrays into anyOf branches, at any depth', () => {
    expect(
      portableSchema({
        type: 'object',
        properties: {
          key: { type: ['string', 'null'], description: 'k', maxLength: 5 },
          list: { type: 'array', items: { type: ['integer', 'null'] } },
          plain: { type: 'string' },
        },
      }),
    ).toEqual({
      type: 'object',
      properties: {
        key: { description: 'k', anyOf: [{ type: 'string', maxLength: 5 }, { type: 'null' }] },
        list: { type: 'array', items: { anyOf: [{ type: 'integer' }, { type: 'null' }] } },
        plain: { type: 'string' },
      },
    });
  });
});
