import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createClient } from '@ctxbus/client';
import { removeDir, runCli, tempDir, useHubProcess } from '@ctxbus/test-kit';
import { afterAll, describe, expect, it } from 'vitest';

// `ctxbus handoff` run as the real command in a temporary workspace, publishing to a real hub.

const hub = useHubProcess({
  tokens: { agent: ['acme', 'openclaw'], reader: ['acme', 'claude-code'] },
});
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) removeDir(dir);
});
const fresh = () => {
  const dir = tempDir('ctxbus-handoff-cli-');
  dirs.push(dir);
  return dir;
};

describe('ctxbus handoff', { timeout: 60_000 }, () => {
  it('init finds an OpenClaw workspace and adds the rules to HEARTBEAT.md once', async () => {
    const workspace = fresh();
    writeFileSync(join(workspace, 'AGENTS.md'), '# Agents\n');
    writeFileSync(join(workspace, 'HEARTBEAT.md'), '# Heartbeat\n\n- check the inbox\n');
    const first = await runCli(['handoff', 'init', '--workspace', workspace]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(
      /^OpenClaw agent workspace .*: .*\.context-bus ready; rules added to/,
    );
    const again = await runCli(['handoff', 'init', '--workspace', workspace]);
    expect(again.stdout).toContain('already has the rules');
    const heartbeatFile = readFileSync(join(workspace, 'HEARTBEAT.md'), 'utf8');
    expect(heartbeatFile).toMatch(
      /^# Heartbeat\n\n- check the inbox\n\n<!-- ctxbus handoff rules -->/,
    );
    expect(heartbeatFile.match(/ctxbus handoff rules/g)).toHaveLength(1);
    const plain = fresh();
    const project = await runCli(['handoff', 'init', '--workspace', plain]);
    expect(project.stdout).toMatch(/^project /);
  });

  it('heartbeat, status and switch, each published to the hub for the other runtimes', async () => {
    const workspace = fresh();
    const hubArgs = ['--workspace', workspace, '--url', hub.url, '--token', hub.tokens.agent];
    const beat = await runCli([
      'handoff',
      'heartbeat',
      '--model',
      'opus',
      '--usage',
      '91',
      '--task',
      'Billing migration',
      '--action',
      'Migrated the invoices table',
      '--next',
      'Backfill old invoices',
      ...hubArgs,
    ]);
    expect(beat.code, beat.stderr).toBe(0);
    expect(beat.stdout).toBe('heartbeat 1 saved (opus)\n');
    const status = await runCli(['handoff', 'status', '--workspace', workspace]);
    expect(status.stdout).toMatch(
      /sequence 1, 0 min old, checksum ok, ready\nmodel: opus \(91%\)\ntask: Billing migration \[in_progress\]\nnext: Backfill old invoices\n$/,
    );

    const switched = await runCli([
      'handoff',
      'switch',
      '--to',
      'codex',
      '--reason',
      'opus at 91%',
      ...hubArgs,
    ]);
    expect(switched.code, switched.stderr).toBe(0);
    expect(switched.stdout).toMatch(
      /^Continuing from opus's work on Billing migration \(switched: opus at 91%\)\./,
    );
    const reader = createClient({ url: hub.url, token: hub.tokens.reader });
    const seen = await reader.list({ tags: 'handoff', limit: 10 });
    expect(seen.items[0]).toMatchObject({
      type: 'status',
      urgency: 'attention',
      title: 'Agent switched from opus to codex: Billing migration',
    });
    expect(seen.items[0]?.content).toContain('Next: Backfill old invoices');
    // Keyed per workspace: the switch superseded the heartbeat's item.
    expect(seen.items).toHaveLength(1);
  });

  it('refuses a tampered handoff, a missing one and bad input, each with its exit code', async () => {
    const workspace = fresh();
    await runCli(['handoff', 'heartbeat', '--model', 'opus', '--workspace', workspace]);
    const file = join(workspace, '.context-bus', 'handoff.json');
    const handoff = JSON.parse(readFileSync(file, 'utf8'));
    writeFileSync(file, JSON.stringify({ ...handoff, author: 'someone else' }));
    const tampered = await runCli([
      'handoff',
      'switch',
      '--to',
      'codex',
      '--reason',
      'limit',
      '--workspace',
      workspace,
    ]);
    expect(tampered.code).toBe(2);
    expect(tampered.stderr).toMatch(/handoff\.json fails its checksum/);
    const none = await runCli(['handoff', 'status', '--workspace', fresh()]);
    expect(none.code).toBe(4);
    const badUsage = await runCli([
      'handoff',
      'heartbeat',
      '--model',
      'x',
      '--usage',
      '150',
      '--workspace',
      workspace,
    ]);
    expect(badUsage.code).toBe(2);
    expect(badUsage.stderr).toContain('--usage must be a percentage 0-100');
  });
});
