import { call, runCli, runCliInTerminal } from '@ctxbus/test-kit';
import { useHubPair, withPostgres } from '@ctxbus/test-kit/postgres';
import { describe, expect, it } from 'vitest';
import { useInProcessHub } from './in-process-serve.ts';

// Conflicts over a real `ctxbus serve` and the real CLI (issue 27, part 9): Claude Code and
// OpenClaw write different values on one key; the hub keeps the newer (last-write-wins) and
// raises a conflict item naming both; `ctxbus conflicts` lists it; `ctxbus conflicts resolve`
// runs only at a terminal (an agent's shell has none) and keeps a value once the person types
// the end of its id; with an agent's token the hub refuses it (403; the CLI exits 3), with the
// CLI's token (a person) it keeps the chosen value. A hub started with --conflict-window off raises none. On PostgreSQL,
// two hubs taking writes of the same keys at the same moment raise exactly one conflict a key.

const hub = useInProcessHub({
  tokens: {
    code: ['acme', 'claude-code'],
    claw: ['acme', 'openclaw'],
    cli: ['acme', 'cli'],
  },
});

async function write(token: string, title: string, key: string) {
  const response = await call(hub.url, 'POST', '/api/context', {
    token,
    body: { type: 'decision', title, summary: `${title}, because.`, key },
  });
  expect(response.status).toBe(201);
  return response.body.items[0] as { id: string };
}

const cli = (token: string, ...args: string[]) =>
  runCli([...args, '--url', hub.url], { env: { CTXBUS_TOKEN: token } });

describe('conflicts through the CLI', () => {
  it('lists a conflict between two runtimes and lets only a person keep a value', async () => {
    const key = 'project/queue';
    const first = await write(hub.tokens.code, 'Queue on PostgreSQL', key);
    const second = await write(hub.tokens.claw, 'Queue on Redis', key);
    // The same runtime rewriting its own value raises nothing more.
    const third = await write(hub.tokens.claw, 'Queue on Redis streams', key);

    const listed = await cli(hub.tokens.code, 'conflicts', '--json');
    expect(listed.code).toBe(0);
    const { conflicts } = JSON.parse(listed.stdout) as {
      conflicts: { id: string; key: string; values: { id: string; runtime: string }[] }[];
    };
    expect(conflicts).toHaveLength(1);
    const [conflict] = conflicts;
    if (!conflict) throw new Error('no conflict');
    expect(conflict.key).toBe(key);
    expect(conflict.values.map((value) => [value.id, value.runtime])).toEqual([
      [first.id, 'claude-code'],
      [second.id, 'openclaw'],
    ]);
    const text = await cli(hub.tokens.code, 'conflicts');
    expect(text.stdout).toContain(`${conflict.id}  open`);
    expect(text.stdout).toContain('claude-code: Queue on PostgreSQL');

    // No terminal (an agent's shell): refused before anything is sent.
    const headless = await cli(
      hub.tokens.cli,
      'conflicts',
      'resolve',
      conflict.id,
      '--keep',
      first.id,
    );
    expect(headless.code).toBe(2);
    expect(headless.stderr).toContain('ctxbus conflicts resolve needs a person at a terminal');
    const atTerminal = (token: string, keep: string, answer: (shown: string) => string) =>
      runCliInTerminal(
        [
          'conflicts',
          'resolve',
          conflict.id,
          '--keep',
          keep,
          '--note',
          'PostgreSQL is already there',
          '--url',
          hub.url,
        ],
        { env: { CTXBUS_TOKEN: token }, prompt: 'characters of its id', answer },
      );
    // An agent's token at a terminal: the hub refuses it.
    const refused = await atTerminal(hub.tokens.code, first.id, () => first.id.slice(-6));
    expect(refused.code, refused.stdout).toBe(3);
    expect(refused.stdout).toMatch(/cannot resolve conflicts: only people pick/);
    const direct = await call(hub.url, 'POST', `/api/conflicts/${conflict.id}/resolve`, {
      token: hub.tokens.claw,
      body: { keep: second.id },
    });
    expect(direct.status).toBe(403);
    expect(direct.body.error.details.reason).toBe('approver_required');
    // A person, a wrong answer: nothing kept.
    const wrong = await atTerminal(hub.tokens.cli, first.id, () => 'yes');
    expect(wrong.code, wrong.stdout).toBe(2);
    expect(wrong.stdout).toContain('claude-code\'s value "Queue on PostgreSQL"');
    expect(wrong.stdout).toContain('not resolved');

    const kept = await atTerminal(hub.tokens.cli, first.id, () => first.id.slice(-6));
    expect(kept.code, kept.stdout).toBe(0);
    expect(kept.stdout).toContain(`Kept ${first.id} as ${key}`);
    const held = await call(hub.url, 'GET', `/api/context?key=${key}`, { token: hub.tokens.claw });
    expect(held.body.items).toHaveLength(1);
    expect(held.body.items[0]).toMatchObject({
      title: 'Queue on PostgreSQL',
      supersedes: third.id,
      source: { runtime: 'cli' },
    });
    const after = await cli(hub.tokens.code, 'conflicts');
    expect(after.stdout.trim()).toBe('No open conflicts.');
    // What the hub would refuse is said before the person is asked: resolved already (exit 5),
    // a --keep that is no item id (exit 2).
    let asked = false;
    const again = await atTerminal(hub.tokens.cli, second.id, () => {
      asked = true;
      return second.id.slice(-6);
    });
    expect(again.code, again.stdout).toBe(5);
    expect(again.stdout).toContain(
      `conflict ${conflict.id} is already resolved (cli kept ${first.id})`,
    );
    const notAnId = await atTerminal(hub.tokens.cli, 'x', () => {
      asked = true;
      return 'x';
    });
    expect(notAnId.code, notAnId.stdout).toBe(2);
    expect(notAnId.stdout).toContain('--keep must be an item id (a UUID): "x"');
    expect(asked).toBe(false);

    const audit = await call(hub.url, 'GET', '/api/audit?limit=100', { token: hub.tokens.cli });
    const records = (audit.body.records as { kind: string; actor: string; subject: string }[])
      .filter((record) => record.subject === conflict.id)
      .map((record) => [record.kind, record.actor]);
    expect(records).toEqual([
      ['conflict.refused', 'claude-code'],
      ['conflict.refused', 'openclaw'],
      ['conflict.resolved', 'cli'],
    ]);
  });
});

describe('a hub with --conflict-window off', () => {
  const quiet = useInProcessHub({
    args: ['--conflict-window', 'off'],
    tokens: { code: ['acme', 'claude-code'], claw: ['acme', 'openclaw'] },
  });

  it('keeps last-write-wins and raises no conflict', async () => {
    for (const [token, title] of [
      [quiet.tokens.code, 'a'],
      [quiet.tokens.claw, 'b'],
    ] as const) {
      const response = await call(quiet.url, 'POST', '/api/context', {
        token,
        body: { type: 'decision', title, key: 'project/x' },
      });
      expect(response.status).toBe(201);
    }
    const listed = await call(quiet.url, 'GET', '/api/conflicts', { token: quiet.tokens.code });
    expect(listed.body.conflicts).toEqual([]);
    const held = await call(quiet.url, 'GET', '/api/context?key=project/x', {
      token: quiet.tokens.code,
    });
    expect(held.body.items.map((item: { title: string }) => item.title)).toEqual(['b']);
  });
});

await withPostgres('conflicts on PostgreSQL', (url, schemas) => {
  describe('two hubs on one PostgreSQL schema, racing writes', () => {
    const { a, b } = useHubPair(url, schemas, 'conflicts', useInProcessHub);

    it('raise exactly one conflict per key, naming both runtimes', async () => {
      const keys = Array.from({ length: 12 }, (_, index) => `race/key-${index}`);
      await Promise.all(
        keys.flatMap((key) => [
          call(a.url, 'POST', '/api/context', {
            token: a.tokens.claw,
            body: { type: 'decision', title: `openclaw on ${key}`, key },
          }),
          call(b.url, 'POST', '/api/context', {
            token: a.tokens.code,
            body: { type: 'decision', title: `claude-code on ${key}`, key },
          }),
        ]),
      );
      const listed = await call(a.url, 'GET', '/api/conflicts?limit=200', {
        token: a.tokens.code,
      });
      const conflicts = listed.body.conflicts as {
        key: string;
        values: { runtime: string }[];
      }[];
      expect(conflicts.map((conflict) => conflict.key).sort()).toEqual([...keys].sort());
      for (const conflict of conflicts) {
        expect(conflict.values.map((value) => value.runtime).sort()).toEqual([
          'claude-code',
          'openclaw',
        ]);
      }
    });
  });
});
