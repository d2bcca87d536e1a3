import { describe, expect, it } from 'vitest';
import { parseDocument, renderFrontMatter, stringList } from './front-matter.js';

describe('parseDocument', () => {
  it('reads the front matter this package writes, and gives the body after it', () => {
    const meta = { agent: 'claude-code', entities: ['Postgres', 'auth'], score: 3, done: false };
    const { meta: read, body } = parseDocument(`${renderFrontMatter(meta)}# Notes\n\ntext\n`);
    expect(read).toEqual(meta);
    expect(body).toBe('# Notes\n\ntext\n');
  });

  it('reads YAML people write: block lists, flow lists, multi-line strings, nested maps', () => {
    const text = [
      '---',
      'title: "Auth: the plan"',
      'tags:',
      '  - auth',
      '  - security',
      'entities: [Postgres, Redis]',
      'summary: |',
      '  first line',
      '  second line',
      'owner:',
      '  runtime: openclaw',
      '---',
      'body',
    ].join('\n');
    expect(parseDocument(text).meta).toEqual({
      title: 'Auth: the plan',
      tags: ['auth', 'security'],
      entities: ['Postgres', 'Redis'],
      summary: 'first line\nsecond line\n',
      owner: { runtime: 'openclaw' },
    });
  });

  it('keeps the fields of front matter that YAML refuses (a colon in a plain value)', () => {
    const text = '---\ntitle: Decision: use Postgres\ntags:\n  - db\n---\nbody\n';
    expect(parseDocument(text)).toEqual({
      meta: { title: 'Decision: use Postgres', tags: ['db'] },
      body: 'body\n',
    });
  });

  it('has no front matter without the opening or the closing line', () => {
    expect(parseDocument('# just text\n')).toEqual({ meta: {}, body: '# just text\n' });
    expect(parseDocument('---\ntitle: x\nno end\n').meta).toEqual({});
    expect(parseDocument('---\r\ntitle: x\r\n---\r\nbody').meta).toEqual({ title: 'x' });
  });

  it('reads front matter that is not a map as none', () => {
    expect(parseDocument('---\n- a\n- b\n---\nbody').meta).toEqual({});
  });
});

describe('stringList', () => {
  it('takes strings, and a lone string as a one-item list', () => {
    expect(stringList(['a', ' b ', 3, ''])).toEqual(['a', 'b']);
    expect(stringList(' solo ')).toEqual(['solo']);
    expect(stringList(undefined)).toEqual([]);
  });
});
