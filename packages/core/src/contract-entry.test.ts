import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/** Reads a built entry and every chunk it loads, checking each file's code. */
function visitBundle(entry: string, check: (code: string, file: string) => void): Set<string> {
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const code = readFileSync(new URL(`../dist/${file}`, import.meta.url), 'utf8');
    check(code, file);
    for (const match of code.matchAll(/from\s+["']\.\/([^"']+)["']/g))
      if (match[1]) visit(match[1]);
  };
  visit(entry);
  return seen;
}

// Clients import @ctxbus/core/contract to start fast: it must not pull in the tokenizer.
describe('@ctxbus/core/contract', () => {
  it('does not load gpt-tokenizer or the YAML parser, directly or through a shared chunk', () => {
    const seen = visitBundle('contract.js', (code, file) => {
      expect(code, file).not.toMatch(/gpt-tokenizer|from\s*["']yaml/);
    });
    expect(seen.size).toBeGreaterThan(1);
  });
});

// Hooks import @ctxbus/core/light once per run: it must load neither zod nor the tokenizer.
describe('@ctxbus/core/light', () => {
  it('does not load zod or gpt-tokenizer, directly or through a shared chunk', () => {
    visitBundle('light.js', (code, file) => {
      expect(code, file).not.toMatch(/gpt-tokenizer|from\s*["']zod/);
    });
  });
});

// The CLI's capabilities, route and worker commands import @ctxbus/core/capabilities: no tokenizer.
describe('@ctxbus/core/capabilities', () => {
  it('does not load gpt-tokenizer, directly or through a shared chunk', () => {
    const seen = visitBundle('capabilities-entry.js', (code, file) => {
      expect(code, file).not.toMatch(/gpt-tokenizer/);
    });
    expect(seen.size).toBeGreaterThan(1);
  });
});
