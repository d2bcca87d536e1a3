import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  bootstrapSharedContext,
  PRIORITIES_INBOX_TEMPLATE,
  PRIORITIES_TEMPLATE,
  SHARED_CONTEXT_DIRS,
} from './bootstrap.js';
import { sharedContextPaths } from './paths.js';
import { parseInbox, splitPriorities } from './priorities.js';

let base: string;
beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'ctxbus-sc-boot-'));
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

describe('bootstrapSharedContext', () => {
  it('creates the directories and templates, then nothing on a second run', () => {
    const paths = sharedContextPaths({ dir: join(base, 'a', 'shared-context') });
    const first = bootstrapSharedContext(paths);
    expect(first.created).toEqual([
      '.',
      ...SHARED_CONTEXT_DIRS.map((dir) => `${dir}/`),
      'priorities.md',
      'priorities.inbox.md',
    ]);
    for (const dir of SHARED_CONTEXT_DIRS)
      expect(existsSync(join(paths.root, dir)), dir).toBe(true);
    expect(readFileSync(paths.priorities, 'utf8')).toBe(PRIORITIES_TEMPLATE);
    expect(readFileSync(paths.prioritiesInbox, 'utf8')).toBe(PRIORITIES_INBOX_TEMPLATE);
    expect(bootstrapSharedContext(paths).created).toEqual([]);
  });

  it('never overwrites existing files', () => {
    const paths = sharedContextPaths({ dir: join(base, 'b') });
    bootstrapSharedContext(paths);
    writeFileSync(paths.priorities, '# Ours\n\n## CANONICAL (curator)\n- Keep this\n');
    writeFileSync(paths.prioritiesInbox, 'edited\n');
    bootstrapSharedContext(paths);
    expect(readFileSync(paths.priorities, 'utf8')).toBe(
      '# Ours\n\n## CANONICAL (curator)\n- Keep this\n',
    );
    expect(readFileSync(paths.prioritiesInbox, 'utf8')).toBe('edited\n');
  });

  it('writes templates the parsers read as empty', () => {
    expect(splitPriorities(PRIORITIES_TEMPLATE)).toEqual({
      canonical: '',
      rest: '## Automated inputs',
    });
    expect(parseInbox(PRIORITIES_INBOX_TEMPLATE)).toEqual({ entries: [], malformed: [] });
  });
});
