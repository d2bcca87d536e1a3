import { expect } from 'vitest';
import type { ConformanceHarness } from './conformance-harness.js';

// API tokens (see runStoreConformance, which runs these).

export const TOKEN_CASES = ['tokens'] as const;

export type TokenCase = (typeof TOKEN_CASES)[number];

export function tokenCases(h: ConformanceHarness): Record<TokenCase, () => Promise<void>> {
  return {
    async tokens() {
      const store = h.store();
      const base = { label: null, createdAt: h.now().toISOString(), revokedAt: null };
      await store.createToken({
        ...base,
        id: 'tok_admin',
        hash: 'h0',
        role: 'admin',
        teamId: null,
        runtime: null,
      });
      await store.createToken({
        ...base,
        id: 'tok_a',
        hash: 'h1',
        role: 'runtime',
        teamId: 'acme',
        runtime: 'web',
      });
      await store.createToken({
        ...base,
        id: 'tok_g',
        hash: 'h2',
        role: 'runtime',
        teamId: 'globex',
        runtime: 'web',
      });
      expect((await store.findTokenByHash('h1'))?.id).toBe('tok_a');
      expect(await store.findTokenByHash('nope')).toBeNull();
      expect((await store.listTokens({ teamId: 'acme' })).map((token) => token.id)).toEqual([
        'tok_a',
      ]);
      const revoked = await store.revokeToken('tok_a');
      expect(revoked?.revokedAt).not.toBeNull();
      expect((await store.findTokenByHash('h1'))?.revokedAt).not.toBeNull();
      expect((await store.listTokens()).map((token) => token.id)).toEqual(['tok_admin', 'tok_g']);
      expect(await store.listTokens({ includeRevoked: true })).toHaveLength(3);
      expect(await store.revokeToken('missing')).toBeNull();
    },
  };
}
