import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// Hooks import @ctxbus/core/light once per run: it must load neither zod nor the tokenizer.
describe('@ctxbus/core/light', () => {
  it('does not load zod or gpt-tokenizer, directly or through a shared chunk', () => {
    const seen = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const code = readFileSync(new URL(`../dist/${file}`, import.meta.url), 'utf8');
      expect(code, file).not.toMatch(/gpt-tokenizer|from\s*["']zod/);
      for (const match of code.matchAll(/from\s+["']\.\/([^"']+)["']/g))
        if (match[1]) visit(match[1]);
    };
    visit('light.js');
  });
});
