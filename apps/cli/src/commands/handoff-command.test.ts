import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { createClient } from '@ctxbus/client';
import { CtxbusTelegramBot } from '@ctxbus/telegram';
import { startTestBotApi } from '@ctxbus/telegram/testing';
import {
  removeDir,
  runCli,
  spawnCli,
  tempDir,
  useHubProcess,
  waitFor,
  waitUntil,
} from '@ctxbus/test-kit';
import { afterAll, describe, expect, it } from 'vitest';
import { handoffKey } from './handoff.js';

// `ctxbus handoff` run as the real command in a temporary workspace, publishing to a real hub.

const hub = useHubProcess({
  tokens: {
    agent: ['acme', 'openclaw'],
    reader: ['acme', 'claude-code'],
    telegram: ['acme', 'telegram'],
  },
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
/** A config.yaml of the test's own, passed the way users would: $CONTEXT_BUS_CONFIG. */
const withConfig = (yaml: string) => {
  const file = join(fresh(), 'config.yaml');
  writeFileSync(file, yaml);
  return { CONTEXT_BUS_CONFIG: file };
};

describe('ctxbus handoff', () => {
  it('init finds an OpenClaw workspace and adds the rules to HEARTBEAT.md once', async () => {
    const workspace = fresh();
    writeFileSync(join(workspace, 'AGENTS.md'), '# Agents\n');
    writeFileSync(join(workspace, 'HEARTBEAT.md'), '# Heartbeat\n\n- check the inbox\n');
    const first = await runCli(['handoff', 'init', '--workspace', workspace]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(
      /^OpenClaw agent workspace .*: .*\.context-bus ready; .*handoff\.json written \(opus, not started\); rules added to/,
    );
    // A valid first handoff.json: status reads it (checksum, sequence 1), not ready yet.
    const status = await runCli(['handoff', 'status', '--workspace', workspace, '--json']);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout).handoff).toMatchObject({
      sequence: 1,
      author: 'ctxbus-init',
      model: { current: 'opus' },
      task: { description: 'not started', status: 'not_started' },
      handoff_ready: false,
    });
    const again = await runCli(['handoff', 'init', '--workspace', workspace, '--model', 'codex']);
    expect(again.stdout).toContain('already has the rules');
    expect(again.stdout).toContain('handoff.json kept');
    // The first heartbeat names the model that works, whatever init expected.
    const beat = await runCli([
      'handoff',
      'heartbeat',
      '--workspace',
      workspace,
      '--model',
      'claude-opus',
      '--no-publish',
    ]);
    expect(beat.code, beat.stderr).toBe(0);
    const after = await runCli(['handoff', 'status', '--workspace', workspace, '--json']);
    expect(JSON.parse(after.stdout).handoff).toMatchObject({
      sequence: 2,
      author: 'claude-opus',
      model: { current: 'claude-opus' },
    });
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
    // 91% is above the default proactive threshold (80%): the summary is written too.
    expect(beat.stdout).toMatch(
      /^heartbeat 1 saved \(opus\); .*rolling-summary\.md written \(usage 91% >= 80%\)\n$/,
    );
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
      title: 'Switched opus -> codex (91%): Billing migration. Context preserved.',
      relevanceTags: ['handoff', 'codex', 'model-switch'],
    });
    // The resume note lists the next steps, once.
    expect(seen.items[0]?.content).toContain('Next steps:\n- Backfill old invoices');
    expect(seen.items[0]?.content).not.toContain('Next: ');
    // Keyed per workspace: the switch superseded the heartbeat's item. The key names the
    // workspace's directory and a hash of its path, not the path.
    expect(seen.items).toHaveLength(1);
    expect(seen.items[0]?.key).toBe(handoffKey(workspace));
    expect(seen.items[0]?.key).toMatch(new RegExp(`^handoff/${basename(workspace)}-[0-9a-f]{12}$`));
    expect(seen.items[0]?.key).not.toContain(dirname(workspace));
    // A runtime shown summaries only (OpenClaw) reads the next steps there.
    expect(seen.items[0]?.summary).toBe('Next: Backfill old invoices');
  });

  it('publishes a switch whatever the model is called and however large the handoff: each field cut to what the hub takes', async () => {
    const workspace = fresh();
    const hubArgs = ['--workspace', workspace, '--url', hub.url, '--token', hub.tokens.agent];
    const long = (label: string, index: number) => `${label} ${index} ${'x'.repeat(1_980)}`;
    const lists = Array.from({ length: 40 }, (_, index) => [
      ...['--next', long('next', index), '--decision', long('decision', index)],
      ...['--blocker', long('blocker', index)],
    ]).flat();
    const beat = await runCli([
      ...['handoff', 'heartbeat', '--model', 'opus', '--usage', '50'],
      ...['--task', 't'.repeat(1_900), ...lists, ...hubArgs],
    ]);
    expect(beat.code, beat.stderr).toBe(0);
    const switched = await runCli([
      ...['handoff', 'switch', '--to', 'Weird Model/Name, with: stuff', '--reason', 'big'],
      ...['--wait', '0', ...hubArgs],
    ]);
    expect(switched.code, switched.stderr).toBe(0);
    const reader = createClient({ url: hub.url, token: hub.tokens.reader });
    const [item] = (await reader.list({ key: handoffKey(workspace), limit: 1 })).items;
    expect(item?.title).toMatch(
      /^Switched opus -> Weird Model\/Name, with: stuff \(50%\): t+\u2026$/,
    );
    expect(item?.title.length).toBe(300);
    expect(item?.relevanceTags).toEqual([
      'handoff',
      'weird-model/name-with:-stuff',
      'model-switch',
    ]);
    expect(item?.summary).toMatch(/^Next: next 0 x+\u2026$/);
    expect(item?.summary.length).toBe(1_000);
    expect(item?.content.length).toBe(20_000);
    expect(item?.content).toMatch(/^Continuing from opus's work on t+/);
  });

  it('config.yaml: a bad field is named with its line (exit 2); its workspace is the default', async () => {
    const bad = await runCli(['handoff', 'status'], {
      env: withConfig('safety:\n  max_wait_seconds: -1\n'),
    });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(
      /^ctxbus: error: .*config\.yaml:2:21: safety\.max_wait_seconds: Too small: expected number to be >=0\n$/,
    );
    const workspace = fresh();
    const env = withConfig(`workspace: ${workspace}\n`);
    const beat = await runCli(['handoff', 'heartbeat', '--model', 'opus'], { env });
    expect(beat.code, beat.stderr).toBe(0);
    expect(existsSync(join(workspace, '.context-bus', 'handoff.json'))).toBe(true);
    // A bad heartbeat field is one line naming it (exit 2), and changes nothing.
    const before = readFileSync(join(workspace, '.context-bus', 'handoff.json'), 'utf8');
    const empty = await runCli(['handoff', 'heartbeat', '--model', '', '--no-publish'], { env });
    expect([empty.code, empty.stderr]).toEqual([
      2,
      'ctxbus: error: --model must name a model (got a blank value)\n',
    ]);
    const blank = await runCli(['handoff', 'heartbeat', '--model', '   ', '--no-publish'], { env });
    expect([blank.code, blank.stderr]).toEqual([
      2,
      'ctxbus: error: --model must name a model (got a blank value)\n',
    ]);
    const tooLong = await runCli(
      ['handoff', 'heartbeat', '--model', 'm'.repeat(101), '--no-publish'],
      { env },
    );
    expect(tooLong.code).toBe(2);
    expect(tooLong.stderr).toMatch(/^ctxbus: error: handoff\.author: .*\n$/);
    const noTarget = await runCli(['handoff', 'switch', '--to', ' ', '--reason', 'r'], { env });
    expect([noTarget.code, noTarget.stderr]).toEqual([
      2,
      'ctxbus: error: --to must name a model (got a blank value)\n',
    ]);
    expect(readFileSync(join(workspace, '.context-bus', 'handoff.json'), 'utf8')).toBe(before);
    // A flag's value checked as the command line is read: the same one line and exit 2.
    const badWait = await runCli(
      ['handoff', 'switch', '--to', 'codex', '--reason', 'r', '--wait', 'abc'],
      { env },
    );
    expect([badWait.code, badWait.stderr]).toEqual([
      2,
      'ctxbus: error: --wait must be whole seconds (got "abc")\n',
    ]);
  });

  it('heartbeat writes the rolling summary from the proactive threshold on', async () => {
    const workspace = fresh();
    const env = withConfig('thresholds:\n  proactive_summary: 70\n');
    const summary = join(workspace, '.context-bus', 'rolling-summary.md');
    const below = await runCli(
      ['handoff', 'heartbeat', '--model', 'opus', '--usage', '69', '--workspace', workspace],
      { env },
    );
    expect(below.stdout).toBe('heartbeat 1 saved (opus)\n');
    expect(existsSync(summary)).toBe(false);
    const above = await runCli(
      [
        'handoff',
        'heartbeat',
        '--model',
        'opus',
        '--usage',
        '70',
        '--task',
        'Billing',
        '--action',
        'Migrated invoices',
        '--next',
        'Backfill',
        '--workspace',
        workspace,
      ],
      { env },
    );
    expect(above.stdout).toBe(`heartbeat 2 saved (opus); ${summary} written (usage 70% >= 70%)\n`);
    const text = readFileSync(summary, 'utf8');
    expect(text).toMatch(
      /^---\nschema_version: 2\ngenerated: .*\nauthor: opus\ntoken_count: \d+\n---\n/,
    );
    expect(text).toContain('## Recent Progress\n- Migrated invoices\n');
    expect(text).toContain('## Immediate Next Steps\n1. Backfill\n');
  });

  it('switch asks for a final heartbeat and waits for it; without one it switches with a warning', async () => {
    const workspace = fresh();
    const env = withConfig('safety:\n  max_wait_seconds: 30\n');
    await runCli(
      ['handoff', 'heartbeat', '--model', 'opus', '--not-ready', '--workspace', workspace],
      { env },
    );
    const request = join(workspace, '.context-bus', 'heartbeat-request.json');
    const switching = spawnCli(
      ['handoff', 'switch', '--to', 'codex', '--reason', 'opus at 95%', '--workspace', workspace],
      { env },
    );
    await waitUntil(() => existsSync(request), 'the switch to ask for a final heartbeat');
    expect(JSON.parse(readFileSync(request, 'utf8'))).toMatchObject({
      after_sequence: 1,
      to: 'codex',
    });
    const final = await runCli(
      [
        'handoff',
        'heartbeat',
        '--model',
        'opus',
        '--action',
        'Saved state',
        '--next',
        'Backfill',
        '--workspace',
        workspace,
      ],
      { env },
    );
    expect(final.code, final.stderr).toBe(0);
    const switched = await waitFor(switching.done, 'the switch to finish');
    expect(switched.code, switched.stderr).toBe(0);
    expect(switched.stderr).toMatch(
      /^ctxbus: waiting up to 30 s for a final heartbeat \(.*heartbeat-request\.json, after sequence 1\)\n$/,
    );
    expect(switched.stdout).toBe(
      "Continuing from opus's work on the current task (switched: opus at 95%).\nRecent actions:\n- Saved state\nNext steps:\n- Backfill\n",
    );
    expect(existsSync(request)).toBe(false);

    // Not ready again, and --wait 0: no request, a switch anyway, and the warnings.
    await runCli(
      ['handoff', 'heartbeat', '--model', 'codex', '--not-ready', '--workspace', workspace],
      { env },
    );
    const hurried = await runCli(
      [
        'handoff',
        'switch',
        '--to',
        'gemini',
        '--reason',
        'codex failing',
        '--wait',
        '0',
        '--workspace',
        workspace,
      ],
      { env },
    );
    expect(hurried.code, hurried.stderr).toBe(0);
    expect(hurried.stderr).toBe(
      'ctxbus: warning: the handoff is not marked ready: check its next steps before going on\n',
    );
    expect(hurried.stdout).toMatch(/\(switched: codex failing \(incomplete handoff\)\)\./);
  });

  it("config.yaml's notifications decide publishing when no flag does", async () => {
    const quiet = fresh();
    const loud = fresh();
    const hubEnv = { CTXBUS_URL: hub.url, CTXBUS_TOKEN: hub.tokens.agent };
    const off = await runCli(['handoff', 'heartbeat', '--model', 'opus', '--workspace', quiet], {
      env: { ...hubEnv, ...withConfig('notifications:\n  enabled: false\n') },
    });
    expect(off.code, off.stderr).toBe(0);
    // Defaults (enabled) with a hub known from the environment: published.
    const on = await runCli(['handoff', 'heartbeat', '--model', 'opus', '--workspace', loud], {
      env: hubEnv,
    });
    expect(on.code, on.stderr).toBe(0);
    // A hub but no token for it: not published, and no warning on every heartbeat.
    const tokenless = await runCli(
      ['handoff', 'heartbeat', '--model', 'opus', '--workspace', quiet],
      { env: { CTXBUS_URL: hub.url } },
    );
    expect(tokenless.code).toBe(0);
    expect(tokenless.stderr).toBe('');
    // Asked to publish (--publish, --url, --token) and it fails: saved, and said with its exit
    // code (a bad token 3), not a warning with exit 0.
    const refused = await runCli(
      [
        ...['handoff', 'heartbeat', '--model', 'opus', '--workspace', quiet],
        ...['--url', hub.url, '--token', 'cbx_not-a-token'],
      ],
      { env: {} },
    );
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(
      /^ctxbus: error: the handoff is saved, but not published to the hub: /,
    );
    const reader = createClient({ url: hub.url, token: hub.tokens.reader });
    const keys = (await reader.list({ tags: 'handoff', limit: 50 })).items.map((item) => item.key);
    const keyOf = (dir: string) => expect.stringContaining(dir.split('/').at(-1) as string);
    expect(keys).toContainEqual(keyOf(loud));
    expect(keys).not.toContainEqual(keyOf(quiet));
  });

  it('monitor --once switches at the threshold and tells the hub; below, it only prepares', async () => {
    const workspace = fresh();
    const env = withConfig(
      'models:\n  primary: opus\n  secondary: codex\nthresholds:\n  switch_to_secondary: 90\n  proactive_summary: 75\nnotifications:\n  channel: telegram\n',
    );
    const hubArgs = ['--workspace', workspace, '--url', hub.url, '--token', hub.tokens.agent];
    await runCli(
      [
        'handoff',
        'heartbeat',
        '--model',
        'opus',
        '--usage',
        '80',
        '--task',
        'Reports',
        '--workspace',
        workspace,
      ],
      { env },
    );
    const prepare = await runCli(['handoff', 'monitor', '--once', ...hubArgs], { env });
    expect(prepare.code, prepare.stderr).toBe(0);
    expect(prepare.stdout).toMatch(/^monitor: opus at 80%: .*rolling-summary\.md written\n$/);
    await runCli(
      ['handoff', 'heartbeat', '--model', 'opus', '--usage', '93', '--workspace', workspace],
      { env },
    );
    const monitor = await runCli(['handoff', 'monitor', '--once', ...hubArgs], { env });
    expect(monitor.code, monitor.stderr).toBe(0);
    expect(monitor.stdout).toBe('monitor: switched opus -> codex (auto_threshold: opus at 93%)\n');
    const reader = createClient({ url: hub.url, token: hub.tokens.reader });
    const seen = await reader.list({ tags: 'model-switch', limit: 10 });
    expect(seen.items.find((item) => item.title.includes('Reports'))).toMatchObject({
      urgency: 'attention',
      title: 'Switched opus -> codex (93%): Reports. Context preserved.',
      relevanceTags: ['handoff', 'codex', 'model-switch', 'telegram'],
    });
    // codex at the threshold, with nothing configured after it: exit 5, nothing changed.
    await runCli(
      ['handoff', 'heartbeat', '--model', 'codex', '--usage', '99', '--workspace', workspace],
      { env },
    );
    const stuck = await runCli(['handoff', 'monitor', '--once', '--workspace', workspace], { env });
    expect(stuck.code).toBe(5);
    expect(stuck.stderr).toBe(
      'ctxbus: error: codex is at 99% and no model is configured after it\n',
    );
  });

  it('monitor loops until SIGTERM', async () => {
    const workspace = fresh();
    const env = withConfig('thresholds:\n  proactive_summary: 10\n');
    await runCli(
      ['handoff', 'heartbeat', '--model', 'opus', '--usage', '20', '--workspace', workspace],
      { env },
    );
    const loop = spawnCli(['handoff', 'monitor', '--interval', '5', '--workspace', workspace], {
      env,
    });
    let output = '';
    loop.child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    await waitUntil(() => output.includes('monitor:'), 'the first pass of the loop');
    loop.child.kill('SIGTERM');
    const ended = await waitFor(loop.done, 'the loop to stop on SIGTERM');
    expect(ended.code, ended.stderr).toBe(0);
    expect(ended.stdout).toMatch(/^monitor: opus at 20%: .*written\n$/);

    // --print-timer and --print-cron are --install --dry-run for systemd and cron
    // (handoff-install.test.ts checks what they print).
  });

  it('a switch reaches Telegram at once: the bot pushes what is addressed to it', async () => {
    const botToken = '123456:TEST-handoff_abcdefghijklmnopqrstuvwxyz';
    const api = await startTestBotApi(botToken);
    const stateDir = fresh();
    const bot = await CtxbusTelegramBot.create({
      botToken,
      client: createClient({ url: hub.url, token: hub.tokens.telegram }),
      chats: [100],
      apiRoot: api.apiRoot,
      statePath: join(stateDir, 'telegram-state.json'),
      // The digest never runs here: what arrives comes from the push alone.
      timers: { setInterval: () => 1, clearInterval: () => {} },
    });
    try {
      await bot.start();
      const workspace = fresh();
      const env = withConfig('notifications:\n  channel: telegram\n');
      const hubArgs = ['--workspace', workspace, '--url', hub.url, '--token', hub.tokens.agent];
      const pushed = api.nextCall(
        (call) =>
          call.method === 'sendMessage' &&
          String(call.params.text).includes(
            'Switched opus -> codex (96%): Nightly ETL. Context preserved.',
          ),
      );
      await runCli(
        [
          'handoff',
          'heartbeat',
          '--model',
          'opus',
          '--usage',
          '96',
          '--task',
          'Nightly ETL',
          ...hubArgs,
        ],
        { env },
      );
      const switched = await runCli(
        ['handoff', 'switch', '--to', 'codex', '--reason', 'opus at 96%', ...hubArgs],
        { env },
      );
      expect(switched.code, switched.stderr).toBe(0);
      const call = await waitFor(pushed, 'the switch pushed to the chat');
      expect(call.params.chat_id).toBe(100);
      // The heartbeat before it (no telegram tag, background) was not pushed.
      expect(
        api.sent(100).filter((message) => message.text.includes('working on Nightly ETL')),
      ).toEqual([]);
    } finally {
      await bot.stop();
      await api.close();
    }
  });

  it('refuses a tampered handoff, a missing one and bad input, each with its exit code', async () => {
    const workspace = fresh();
    await runCli(['handoff', 'heartbeat', '--model', 'opus', '--workspace', workspace]);
    const file = join(workspace, '.context-bus', 'handoff.json');
    const handoff = JSON.parse(readFileSync(file, 'utf8'));
    writeFileSync(file, JSON.stringify({ ...handoff, author: 'someone else' }));
    const switchToCodex = ['handoff', 'switch', '--to', 'codex', '--reason', 'limit'];
    const tampered = await runCli([...switchToCodex, '--workspace', workspace]);
    expect(tampered.code).toBe(2);
    expect(tampered.stderr).toMatch(/handoff\.json fails its checksum/);
    // The monitor reads it unverified (as seed 003's monitor would): with no usage over a
    // threshold, it changes nothing.
    const before = readFileSync(file, 'utf8');
    const monitor = await runCli(['handoff', 'monitor', '--once', '--workspace', workspace]);
    expect(monitor.code, monitor.stderr).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe(before);
    // A person who wrote it (or seed 003's own scripts did) takes it as it is.
    const adopted = await runCli(['handoff', 'adopt', '--workspace', workspace]);
    expect(adopted.code, adopted.stderr).toBe(0);
    expect(adopted.stdout).toMatch(/^adopted .*handoff\.json as sequence 2: opus on /);
    expect(JSON.parse(readFileSync(file, 'utf8')).author).toBe('someone else');
    const again = await runCli(['handoff', 'adopt', '--workspace', workspace]);
    expect(again.stdout).toMatch(/passes its checks: nothing to adopt/);
    // Adopting keeps the content's time: a stale file (seed 003's example, written long ago)
    // stays stale, and a switch refuses it (seed 003: less than 5 minutes old).
    writeFileSync(
      file,
      JSON.stringify({
        ...handoff,
        timestamp: '2026-02-01T15:15:00+05:30',
        checksum: 'sha256:abc123...',
      }),
    );
    expect((await runCli(['handoff', 'adopt', '--workspace', workspace])).code).toBe(0);
    expect(JSON.parse(readFileSync(file, 'utf8')).timestamp).toBe('2026-02-01T15:15:00+05:30');
    const stale = await runCli([...switchToCodex, '--wait', '0', '--workspace', workspace]);
    expect(stale.code, stale.stderr).toBe(5);
    expect(stale.stderr).toMatch(/min old \(limit 5 min\)/);
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
