import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// @ctxbus/core must run in browsers: its bundle may not import Node builtins.
describe('@ctxbus/core bundle', () => {
  it('imports no Node builtins', () => {
    const bundle = readFileSync(new URL('../dist/index.js', import.meta.url), 'utf8');
    const imports = [...bundle.matchAll(/from\s+['"]([^'"]+)['"]|import\(['"]([^'"]+)['"]\)/g)].map(
      (match) => match[1] ?? match[2],
    );
    expect(imports.length).toBeGreaterThan(0);
    const builtins = imports.filter(
      (name) =>
        name?.startsWith('node:') ||
        /^(fs|path|crypto|os|child_process|http|net)$/.test(name ?? ''),
    );
    expect(builtins).toEqual([]);
  });
});
