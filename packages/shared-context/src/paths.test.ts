import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { assertAgentId, isoWeek, isoWeekRange, sharedContextPaths } from './paths.js';

describe('sharedContextPaths', () => {
  it('defaults to ~/.openclaw/workspace/shared-context', () => {
    const paths = sharedContextPaths({ home: '/home/ada' });
    expect(paths.root).toBe('/home/ada/.openclaw/workspace/shared-context');
    expect(paths.priorities).toBe('/home/ada/.openclaw/workspace/shared-context/priorities.md');
    expect(paths.feedbackInbox).toBe(
      '/home/ada/.openclaw/workspace/shared-context/feedback/inbox.jsonl',
    );
    expect(paths.agentOutputDir('research')).toBe(
      '/home/ada/.openclaw/workspace/shared-context/agent-outputs/research',
    );
  });

  it('takes an override, absolute, relative or under ~', () => {
    expect(sharedContextPaths({ dir: '/srv/ctx/' }).root).toBe('/srv/ctx');
    expect(sharedContextPaths({ dir: '~/team-ctx', home: '/home/ada' }).root).toBe(
      '/home/ada/team-ctx',
    );
    expect(sharedContextPaths({ dir: 'ctx' }).root).toBe(join(process.cwd(), 'ctx'));
  });

  it('never yields a path outside the root: agent ids, dates and weeks are validated', () => {
    const paths = sharedContextPaths({ dir: '/srv/ctx' });
    for (const bad of ['..', '../x', 'a/b', 'A', '', '.hidden', 'a..b', 'x'.repeat(65)]) {
      expect(() => paths.agentOutputDir(bad), bad).toThrow(/invalid agent id/);
    }
    expect(() => paths.roundtableFile('../../etc')).toThrow(/invalid date/);
    expect(() => paths.feedbackWeekFile('2026-05')).toThrow(/invalid week/);
    expect(paths.kpiFile('ops.bot_1')).toBe('/srv/ctx/kpis/ops.bot_1.json');
    expect(assertAgentId('a1-b.c_d')).toBe('a1-b.c_d');
  });

  it('names ISO weeks across year boundaries', () => {
    expect(isoWeek(new Date('2026-01-01T12:00:00Z'))).toBe('2026-W01');
    expect(isoWeek(new Date('2027-01-01T12:00:00Z'))).toBe('2026-W53');
    expect(isoWeek(new Date('2026-02-04T12:00:00Z'))).toBe('2026-W06');
    const { start, end } = isoWeekRange(new Date('2026-02-04T12:00:00Z'));
    expect(start.toISOString()).toBe('2026-02-02T00:00:00.000Z');
    expect(end.toISOString()).toBe('2026-02-09T00:00:00.000Z');
  });
});
