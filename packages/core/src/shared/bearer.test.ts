import { describe, expect, it } from 'vitest';
import { bearer } from './bearer.js';

describe('bearer', () => {
  it('makes the header of a one-line token', () => {
    expect(bearer('cbx_abc.DEF-123_~')).toBe('Bearer cbx_abc.DEF-123_~');
  });

  it('refuses a token that is not one line of visible characters, never naming it', () => {
    for (const token of ['cbx_abc\ncbx_def', 'cbx_abc\n', ' cbx_abc', 'cbx\tabc', 'cbx_é', '']) {
      let error: unknown;
      try {
        bearer(token);
      } catch (caught) {
        error = caught;
      }
      expect(error, JSON.stringify(token)).toMatchObject({ code: 'validation_failed' });
      expect((error as Error).message).toMatch(/^the token is not one line of visible characters/);
      if (token.trim()) expect((error as Error).message).not.toContain(token.trim().slice(0, 7));
    }
  });
});
