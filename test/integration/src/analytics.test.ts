import { call, runCli } from '@ctxbus/test-kit';
import { describe, expect, it } from 'vitest';
import { useInProcessHub } from './in-process-serve.ts';

// `ctxbus analytics` over a real `ctxbus serve` (issue 27, part 13; seed 000, phase 3: "Context
// analytics (what context is used, what's stale)"): Claude Code's hook injects its bundle,
// OpenClaw searches and consumes, and the CLI reports it per runtime and per day, as text and
// JSON; a private item shows only to its own runtime; bad flags exit 2 with one line.

const hub = useInProcessHub({
  tokens: {
    code: ['acme', 'claude-code'],
    claw: ['acme', 'openclaw'],
    cli: ['acme', 'cli'],
  },
});

const cli = (token: string, ...args: string[]) =>
  runCli(['analytics', ...args, '--url', hub.url], { env: { CTXBUS_TOKEN: token } });

async function write(token: string, body: Record<string, unknown>) {
  const response = await call(hub.url, 'POST', '/api/context', { token, body });
  expect(response.status).toBe(201);
  return response.body.items[0] as { id: string };
}

describe('ctxbus analytics', () => {
  it('reports what each runtime used, what nobody used, and keeps private items private', async () => {
    const decision = await write(hub.tokens.code, {
      type: 'decision',
      title: 'Deploy from the release branch',
    });
    const note = await write(hub.tokens.code, {
      type: 'discovery',
      title: 'Draft of my release checklist',
      visibility: 'private',
    });
    // Claude Code's SessionStart hook: its own bundle, an injection.
    const bundle = await call(hub.url, 'GET', '/api/context/shared?tokenBudget=2000', {
      token: hub.tokens.code,
    });
    expect(bundle.status).toBe(200);
    // `ctxbus shared` is a person's look: not counted.
    expect(
      (await runCli(['shared', '--url', hub.url], { env: { CTXBUS_TOKEN: hub.tokens.cli } })).code,
    ).toBe(0);
    const found = await call(hub.url, 'POST', '/api/context/search', {
      token: hub.tokens.claw,
      body: { query: 'release branch deploy' },
    });
    expect(found.body.results.map((result: { item: { id: string } }) => result.item.id)).toEqual([
      decision.id,
    ]);
    await call(hub.url, 'POST', `/api/context/${decision.id}/consume`, { token: hub.tokens.claw });
    const unused = await write(hub.tokens.claw, { type: 'alert', title: 'Backups are 3 days old' });

    const json = await cli(hub.tokens.code, '--json');
    expect(json.code, json.stderr).toBe(0);
    const report = JSON.parse(json.stdout);
    expect(report.runtimes.map((row: { runtime: string }) => row.runtime)).toEqual([
      'claude-code',
      'openclaw',
    ]);
    expect(report.runtimes[1]).toMatchObject({ consumed: 1, searched: 1, injected: 0 });
    expect(report.topItems[0]).toMatchObject({
      item: { id: decision.id },
      consumed: 1,
      searched: 1,
      runtimes: ['claude-code', 'openclaw'],
    });
    expect(report.neverUsed.items.map((row: { item: { id: string } }) => row.item.id)).toContain(
      unused.id,
    );
    expect(JSON.stringify(report)).toContain(note.id);

    const text = await cli(hub.tokens.code);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^Context use, \d{4}-\d\d-\d\d to \d{4}-\d\d-\d\d \(7 days, UTC\)/);
    expect(text.stdout).toMatch(/openclaw\s+injected 0, consumed 1, searched 1; 1 item$/m);
    expect(text.stdout).toContain(
      `decision Deploy from the release branch (claude-code) ${decision.id}`,
    );
    expect(text.stdout).toContain('Never used (');
    expect(text.stdout).toContain(`alert Backups are 3 days old (openclaw) ${unused.id}`);
    expect(text.stdout).toContain('Stale (0): live, current items older than 14 days');

    // OpenClaw's view of the same team: no trace of Claude Code's private note.
    const claw = await cli(hub.tokens.claw, '--json', '--limit', '100');
    expect(claw.code).toBe(0);
    expect(claw.stdout).not.toContain(note.id);
    expect(claw.stdout).not.toContain('release checklist');
    // One runtime's use only.
    const only = JSON.parse((await cli(hub.tokens.code, '--json', '--runtime', 'openclaw')).stdout);
    expect(only.runtime).toBe('openclaw');
    expect(only.totals).toEqual({ injected: 0, consumed: 1, searched: 1 });
  });

  it('refuses bad flags with exit 2 and one line', async () => {
    const word = await cli(hub.tokens.code, '--window', 'week');
    expect(word.code).toBe(2);
    expect(word.stderr.trim()).toBe('ctxbus: error: --window must be a whole number (got "week")');
    const range = await cli(hub.tokens.code, '--window', '400');
    expect(range.code).toBe(2);
    expect(range.stderr.trim().split('\n')).toHaveLength(1);
    expect(range.stderr).toContain('window');
  });
});
