import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// Clients import @ctxbus/core/contract to start fast: it must not pull in the tokenizer.
describe('@ctxbus/core/contract', () => {
  it('does not load gpt-tokenizer, directly or through a shared chunk', () => {
    const seen = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const code = readFileSync(new URL(`../dist/${file}`, import.meta.url), 'utf8');
      expect(code, file).not.toMatch(/gpt-tokenizer/);
      for (const match of code.matchAll(/from\s+["']\.\/([^"']+)["']/g))
        if (match[1]) visit(match[1]);
    };
    visit('contract.js');
    expect(seen.size).toBeGreaterThan(1);
  });
});
