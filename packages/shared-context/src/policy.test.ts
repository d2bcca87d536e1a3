import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CtxbusError } from '@ctxbus/core/contract';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bootstrapSharedContext, PRIORITIES_TEMPLATE } from './bootstrap.js';
import type { SharedContextPaths } from './paths.js';
import { sharedContextPaths } from './paths.js';
import type { WriteRequest } from './policy.js';
import { assertWriteAllowed } from './policy.js';
import { appendFeedback, appendPrioritiesInbox, writeAgentOutput } from './writers.js';

let base: string;
let paths: SharedContextPaths;

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'ctxbus-sc-policy-'));
  paths = sharedContextPaths({ dir: join(base, 'shared-context') });
  bootstrapSharedContext(paths);
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

/** The `details.reason` of the refusal (fails when the call does not throw). */
function refusal(call: () => unknown): string {
  try {
    call();
  } catch (error) {
    if (!CtxbusError.isInstance(error)) throw error;
    return error.code === 'forbidden'
      ? (error.details as { reason: string }).reason
      : `${error.code}: ${error.message}`;
  }
  throw new Error('expected the write to be refused');
}

const as = (agent: string, mode: WriteRequest['mode'], curator = false): WriteRequest => ({
  agent,
  mode,
  ...(curator && { curator }),
});

describe('assertWriteAllowed', () => {
  it('lets agents write their own directories and kpi file, and append to the inboxes', () => {
    expect(
      assertWriteAllowed(paths, 'agent-outputs/alpha/2026-02-04/x.md', as('alpha', 'create')),
    ).toBe(join(paths.root, 'agent-outputs', 'alpha', '2026-02-04', 'x.md'));
    assertWriteAllowed(paths, 'staging/alpha/idea.md', as('alpha', 'overwrite'));
    assertWriteAllowed(paths, 'kpis/alpha.json', as('alpha', 'overwrite'));
    assertWriteAllowed(paths, 'feedback/inbox.jsonl', as('alpha', 'append'));
    assertWriteAllowed(paths, 'priorities.inbox.md', as('beta', 'append'));
    assertWriteAllowed(paths, 'priorities.md', as('curator', 'overwrite', true));
    assertWriteAllowed(paths, 'roundtable/2026-02-04.md', as('curator', 'overwrite', true));
    assertWriteAllowed(paths, 'cross-signals/2026-02-04.json', as('curator', 'create', true));
  });

  it('refuses path traversal and malformed paths', () => {
    expect(
      refusal(() =>
        assertWriteAllowed(paths, 'agent-outputs/alpha/../beta/x.md', as('alpha', 'create')),
      ),
    ).toBe('path_traversal');
    expect(refusal(() => assertWriteAllowed(paths, '../outside.md', as('alpha', 'create')))).toBe(
      'path_traversal',
    );
    expect(refusal(() => assertWriteAllowed(paths, '/etc/passwd', as('alpha', 'create')))).toBe(
      'path_traversal',
    );
    expect(
      refusal(() => assertWriteAllowed(paths, 'agent-outputs/alpha//x.md', as('alpha', 'create'))),
    ).toBe('bad_path');
    expect(
      refusal(() => assertWriteAllowed(paths, 'agent-outputs\\alpha\\x.md', as('alpha', 'create'))),
    ).toBe('bad_path');
    expect(
      refusal(() => assertWriteAllowed(paths, 'agent-outputs/alpha/./x.md', as('alpha', 'create'))),
    ).toBe('bad_path');
  });

  it("refuses another agent's directories and kpi file", () => {
    expect(
      refusal(() => assertWriteAllowed(paths, 'agent-outputs/beta/x.md', as('alpha', 'create'))),
    ).toBe('not_owner');
    expect(
      refusal(() => assertWriteAllowed(paths, 'staging/beta/x.md', as('alpha', 'append'))),
    ).toBe('not_owner');
    expect(
      refusal(() => assertWriteAllowed(paths, 'kpis/beta.json', as('alpha', 'overwrite'))),
    ).toBe('not_owner');
    expect(refusal(() => assertWriteAllowed(paths, 'kpis/alpha.json', as('alpha', 'append')))).toBe(
      'not_allowed',
    );
  });

  it('keeps the curator-only files to the curator', () => {
    for (const path of [
      'priorities.md',
      'roundtable/2026-02-04.md',
      'cross-signals/2026-02-04.json',
      'staging-archive/2026-02-04/a/x.md',
      'feedback/2026-W06.jsonl',
    ]) {
      expect(
        refusal(() => assertWriteAllowed(paths, path, as('alpha', 'append'))),
        path,
      ).toBe('curator_only');
    }
    // The curator is not an owner of agents' directories either.
    expect(
      refusal(() =>
        assertWriteAllowed(paths, 'agent-outputs/alpha/x.md', as('curator', 'create', true)),
      ),
    ).toBe('not_owner');
  });

  it('refuses anything that would truncate an inbox', () => {
    for (const mode of ['create', 'overwrite'] as const) {
      expect(
        refusal(() => assertWriteAllowed(paths, 'feedback/inbox.jsonl', as('alpha', mode))),
      ).toBe('append_only');
      expect(
        refusal(() => assertWriteAllowed(paths, 'priorities.inbox.md', as('curator', mode, true))),
      ).toBe('append_only');
    }
  });

  it('says so when the directory was never bootstrapped', () => {
    const missing = sharedContextPaths({ dir: join(base, 'missing') });
    expect(
      refusal(() => writeAgentOutput(missing, { agent: 'alpha', title: 'x', body: 'y' })),
    ).toMatch(/^not_found: the shared-context directory .*missing does not exist/);
  });

  it('refuses locations outside the contract', () => {
    for (const path of [
      'notes.md',
      'agent-outputs/alpha',
      'rubrics/x.md',
      'feedback/other.jsonl',
    ]) {
      expect(
        refusal(() => assertWriteAllowed(paths, path, as('alpha', 'create', true))),
        path,
      ).toBe('not_allowed');
    }
    expect(
      refusal(() =>
        assertWriteAllowed(paths, 'agent-outputs/alpha/x.md', as('../alpha', 'create')),
      ),
    ).toMatch(/^validation_failed: invalid agent id/);
  });

  it('refuses a symbolic link that escapes the directory, as a parent or as the file', () => {
    const outside = join(base, 'outside');
    mkdirSync(outside);
    symlinkSync(outside, join(paths.agentOutputs, 'alpha'));
    expect(
      refusal(() => assertWriteAllowed(paths, 'agent-outputs/alpha/x.md', as('alpha', 'create'))),
    ).toBe('symlink_escape');
    expect(
      refusal(() => writeAgentOutput(paths, { agent: 'alpha', title: 'Leak', body: 'x' })),
    ).toBe('symlink_escape');

    mkdirSync(join(paths.staging, 'beta'));
    writeFileSync(join(outside, 'target.md'), 'outside');
    symlinkSync(join(outside, 'target.md'), join(paths.staging, 'beta', 'link.md'));
    expect(
      refusal(() => assertWriteAllowed(paths, 'staging/beta/link.md', as('beta', 'overwrite'))),
    ).toBe('symlink_escape');
    expect(readFileSync(join(outside, 'target.md'), 'utf8')).toBe('outside');
  });

  it("refuses a link inside the directory too: one agent's folder linked to another's", () => {
    mkdirSync(join(paths.agentOutputs, 'alice'), { recursive: true });
    symlinkSync(join(paths.agentOutputs, 'alice'), join(paths.agentOutputs, 'mallory'));
    expect(
      refusal(() =>
        assertWriteAllowed(paths, 'agent-outputs/mallory/x.md', as('mallory', 'create')),
      ),
    ).toBe('symlink_escape');
    expect(
      refusal(() => writeAgentOutput(paths, { agent: 'mallory', title: 'As alice', body: 'x' })),
    ).toBe('symlink_escape');
    expect(readdirSync(join(paths.agentOutputs, 'alice'))).toEqual([]);
  });
});

describe('the writers enforce the policy and the inbox formats', () => {
  it('refuses a bad feedback line and leaves the inbox as it was', () => {
    const good = {
      timestamp: '2026-02-04T10:00:00.000Z',
      agent: 'alpha',
      verdict: 'approved',
      subject: 'Acme memo',
    };
    appendFeedback(paths, good);
    const before = readFileSync(paths.feedbackInbox, 'utf8');
    expect(refusal(() => appendFeedback(paths, { ...good, verdict: 'maybe' }))).toMatch(
      /^validation_failed: feedback.verdict/,
    );
    expect(refusal(() => appendFeedback(paths, { ...good, extra: 1 }))).toMatch(
      /^validation_failed/,
    );
    expect(refusal(() => appendFeedback(paths, { ...good, timestamp: 'yesterday' }))).toMatch(
      /^validation_failed: feedback.timestamp/,
    );
    expect(refusal(() => appendFeedback(paths, good, { file: 'week' }))).toBe('curator_only');
    expect(readFileSync(paths.feedbackInbox, 'utf8')).toBe(before);
    expect(before.trim().split('\n')).toHaveLength(1);
  });

  it('refuses priorities-inbox text that would break the section format', () => {
    expect(
      refusal(() => appendPrioritiesInbox(paths, { agent: 'alpha', text: '## 2026 fake heading' })),
    ).toMatch(/starting with '#'/);
    expect(refusal(() => appendPrioritiesInbox(paths, { agent: 'alpha', text: '   ' }))).toMatch(
      /1-4000/,
    );
    const heading = appendPrioritiesInbox(paths, {
      agent: 'alpha',
      text: 'Ship the memo',
      now: new Date('2026-02-04T10:00:00Z'),
    });
    expect(heading).toBe('## 2026-02-04T10:00:00.000Z alpha');
    expect(readFileSync(paths.prioritiesInbox, 'utf8')).toMatch(
      /-->\n\n## 2026-02-04T10:00:00.000Z alpha\nShip the memo\n$/,
    );
  });

  it('bootstraps without overwriting (the policy aside)', () => {
    writeFileSync(paths.priorities, '# Mine\n');
    expect(bootstrapSharedContext(paths).created).toEqual([]);
    expect(readFileSync(paths.priorities, 'utf8')).toBe('# Mine\n');
    expect(PRIORITIES_TEMPLATE).toContain('## CANONICAL (curator)');
  });
});
