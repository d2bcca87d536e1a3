import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// The root entry is the contract and SQLite: PostgreSQL's driver loads only from
// @ctxbus/store/postgres, so a SQLite hub never pulls in `pg`.
describe('@ctxbus/store root entry', () => {
  it('does not import pg, directly or through a shared chunk', () => {
    const seen = new Set<string>();
    const packages = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const code = readFileSync(new URL(`../dist/${file}`, import.meta.url), 'utf8');
      for (const match of code.matchAll(/(?:from\s+|import\(\s*)["']([^"']+)["']/g)) {
        const target = match[1] ?? '';
        if (target.startsWith('./')) visit(target.slice(2));
        else packages.add(target);
      }
    };
    visit('index.js');
    expect(packages.has('node:sqlite')).toBe(true);
    expect([...packages].filter((name) => name === 'pg' || name.startsWith('pg/'))).toEqual([]);
  });
});
