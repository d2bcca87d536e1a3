import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { HubProcess } from '@ctxbus/test-kit';
import {
  CLI,
  freePort,
  removeDir,
  runCli,
  spawnCli,
  startHubProcess,
  tempDir,
} from '@ctxbus/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const dirs: string[] = [];
let hub: HubProcess | undefined;

afterAll(async () => {
  if (hub) expect(await hub.stop()).toBe(0);
  for (const dir of dirs) removeDir(dir);
});

describe('ctxbus CLI', () => {
  it('prints helpful --help and a usage error for unknown commands', async () => {
    const help = await runCli(['--help']);
    expect(help.code).toBe(0);
    for (const word of [
      'serve',
      'token',
      'write',
      'read',
      'search',
      'shared',
      'watch',
      'Exit codes',
      'CTXBUS_URL',
    ]) {
      expect(help.stdout).toContain(word);
    }
    const writeHelp = await runCli(['write', '--help']);
    expect(writeHelp.stdout).toContain('--urgency');
    const unknown = await runCli(['frobnicate']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe(
      "ctxbus: error: unknown command 'frobnicate' (add --help for usage)\n",
    );
    // `help` with a name it does not know is the same usage error, not the main help.
    const helpUnknown = await runCli(['help', 'frobnicate']);
    expect(helpUnknown.code).toBe(2);
    expect(helpUnknown.stderr).toBe(
      "ctxbus: error: unknown command 'frobnicate' (add --help for usage)\n",
    );
    const helpKnown = await runCli(['help', 'write']);
    expect(helpKnown.code).toBe(0);
    expect(helpKnown.stdout).toContain('--urgency');
    const missing = await runCli(['read', '--bogus']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe("ctxbus: error: unknown option '--bogus' (add --help for usage)\n");
  });

  // The three tests after this one go on with its hub, its data directory and its tokens.
  let dataDir = '';
  let env: Record<string, string> = {};
  let chatToken = '';
  let item: { id: string } = { id: '' };
  it('mints tokens offline before the first start, then serves with them', async () => {
    dataDir = tempDir();
    dirs.push(dataDir);
    const minted = await runCli([
      'token',
      'create',
      '--team',
      'acme',
      '--runtime',
      'claude-code',
      '--data',
      dataDir,
    ]);
    expect(minted.code).toBe(0);
    const token = minted.stdout.trim();
    expect(token).toMatch(/^cbx_[A-Za-z0-9_-]{43}$/);
    const badTeam = await runCli([
      'token',
      'create',
      '--team',
      'no spaces',
      '--runtime',
      'web',
      '--data',
      dataDir,
    ]);
    expect(badTeam.code).toBe(2);
    expect(badTeam.stderr).toMatch(/^ctxbus: error: --team: /);

    hub = await startHubProcess({ dataDir });
    expect(hub.adminToken).toMatch(/^cbx_/);
    env = { CTXBUS_URL: hub.url, CTXBUS_TOKEN: token };

    const busyDir = await runCli(['serve', '--port', '0', '--data', dataDir]);
    expect(busyDir.code).toBe(5);
    expect(busyDir.stderr).toMatch(/is serving/);
    const firstDir = tempDir();
    dirs.push(firstDir);
    const busyPort = await runCli(['serve', '--port', new URL(hub.url).port, '--data', firstDir]);
    expect(busyPort.code).toBe(5);
    expect(busyPort.stderr).toMatch(/already in use; pick another with --port/);
    // That first start never listened, so it handed out no admin token: the next one does.
    const second = await startHubProcess({ dataDir: firstDir });
    try {
      expect(second.adminToken).toMatch(/^cbx_/);
    } finally {
      expect(await second.stop()).toBe(0);
    }

    const refused = await runCli(['token', 'list', '--data', dataDir]);
    expect(refused.code).toBe(5);
    expect(refused.stderr).toMatch(/is serving/);

    const online = await runCli([
      'token',
      'create',
      '--team',
      'acme',
      '--runtime',
      'openclaw',
      '--url',
      hub.url,
      '--admin-token',
      hub.adminToken ?? '',
    ]);
    expect(online.code).toBe(0);
    chatToken = online.stdout.trim();
    // Reading tasks takes a runtime token; with only an admin token the CLI says how to get
    // one, naming no flag the command lacks.
    const noReader = await runCli(['tasks', '--url', hub.url], {
      env: { CTXBUS_ADMIN_TOKEN: hub.adminToken ?? '', CTXBUS_CONFIG_DIR: tempDir() },
    });
    expect(noReader.code).toBe(2);
    // The context commands say the same of the CLI's own token.
    const noToken = await runCli(['read', '--url', hub.url], {
      env: { CTXBUS_CONFIG_DIR: tempDir() },
    });
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toContain(
      `no token for the CLI at ${hub.url}: pass --token, set CTXBUS_TOKEN, or save the CLI's own with \`ctxbus token create --runtime cli --save\``,
    );
    // A mistyped --url, where this machine has a token for another hub: the message names it.
    const savedHere = tempDir();
    const savedEnv = { CTXBUS_CONFIG_DIR: savedHere, CTXBUS_ADMIN_TOKEN: hub.adminToken ?? '' };
    const saving = await runCli(
      ['token', 'create', '--url', hub.url, '--team', 'acme', '--runtime', 'cli', '--save'],
      { env: savedEnv },
    );
    expect(saving.code, saving.stderr).toBe(0);
    const mistyped = await runCli(['read', '--url', 'http://127.0.0.1:1'], {
      env: { CTXBUS_CONFIG_DIR: savedHere },
    });
    expect(mistyped.code).toBe(2);
    expect(mistyped.stderr).toContain(
      `no token for the CLI at http://127.0.0.1:1 (this machine has tokens for ${new URL(hub.url).origin} only: another hub, or a mistyped --url?)`,
    );
    expect(noReader.stderr.trim()).toBe(
      `ctxbus: error: no runtime token for ${hub.url}: pass --token or set CTXBUS_TOKEN (a runtime token of the team), or save the CLI's own with ctxbus token create --team TEAM --runtime cli --save`,
    );
    const list = await runCli([
      'token',
      'list',
      '--url',
      hub.url,
      '--admin-token',
      hub.adminToken ?? '',
      '--json',
    ]);
    // The three above, and the cli token saved for the mistyped --url check.
    expect(JSON.parse(list.stdout).tokens).toHaveLength(4);
  });

  it('writes items from flags, a file and stdin; a refusal is one line', async () => {
    const written = await runCli(
      ['write', '--type', 'decision', '--title', 'Use pnpm', '--tags', 'tooling', '--json'],
      { env },
    );
    expect(written.code).toBe(0);
    item = JSON.parse(written.stdout).items[0];
    expect(item).toMatchObject({ title: 'Use pnpm', relevanceTags: ['tooling'] });
    // The title may be the argument; without a type the error shows the whole form.
    const positional = await runCli(
      ['write', '-t', 'discovery', 'Cache keys are per team', '--json'],
      {
        env,
      },
    );
    expect(positional.code).toBe(0);
    expect(JSON.parse(positional.stdout).items[0].title).toBe('Cache keys are per team');
    const untyped = await runCli(['write', 'just a note'], { env });
    expect(untyped.code).toBe(2);
    expect(untyped.stderr.trim()).toBe(
      'ctxbus: error: write needs --type and a title, e.g. ctxbus write --type discovery "the title" (or --file with JSON items)',
    );
    const twice = await runCli(['write', '-t', 'status', 'a', '--title', 'b'], { env });
    expect(twice.code).toBe(2);
    expect(twice.stderr).toMatch(/give the title once/);

    const fromFile = join(dataDir, 'items.json');
    writeFileSync(
      fromFile,
      JSON.stringify([
        { type: 'status', title: 'from file 1' },
        { type: 'status', title: 'from file 2' },
      ]),
    );
    const batch = await runCli(['write', '--file', fromFile], { env });
    expect(batch.stdout.trim().split('\n')).toHaveLength(2);
    // The hub checks what write sends (the command loads no schemas): a bad field is exit 2
    // with the hub's reason naming it, a bad token exit 3, each on one line; nothing written.
    const badType = await runCli(['write', '--type', 'rumour', '--title', 'x'], { env });
    expect(badType.code).toBe(2);
    expect(badType.stderr.trim().split('\n')).toHaveLength(1);
    expect(badType.stderr).toMatch(/^ctxbus: error: .*type/);
    // A refused field is named by the flag that set it.
    const badTtl = await runCli(['write', '--type', 'status', '--title', 'x', '--ttl', '0'], {
      env,
    });
    expect(badTtl.code).toBe(2);
    expect(badTtl.stderr).toMatch(/^ctxbus: error: --ttl: /);
    writeFileSync(fromFile, JSON.stringify({ items: [{ type: 'status', title: '' }] }));
    const badFile = await runCli(['write', '--file', fromFile], { env });
    expect(badFile.code).toBe(2);
    expect(badFile.stderr).toBe(
      `ctxbus: error: ${fromFile}, item 1: title: Too small: expected string to have >=1 characters\n`,
    );
    // Items from a file are named as the file spells them, not by flags nobody typed.
    const badPiped = await runCli(['write', '--file', '-'], {
      env,
      input: '[{"type":"status","title":"fine"},{"type":"nope","title":"bad"}]',
    });
    expect(badPiped.stderr).toMatch(
      /^ctxbus: error: stdin, item 2: type: Invalid option: expected one of "discovery"/,
    );
    const notJson = await runCli(['write', '--file', '-'], { env, input: 'not json\n' });
    expect([notJson.code, notJson.stderr.split('\n').length]).toEqual([2, 2]);
    expect(notJson.stderr).toMatch(/^ctxbus: error: stdin: .*is not valid JSON\n$/);
    // A value a list flag refuses is named with the values it takes; --budget by its name.
    const badSearchType = await runCli(['search', 'pnpm', '--type', 'nope'], { env });
    expect(badSearchType.stderr).toMatch(
      /^ctxbus: error: --type\[0\]: Invalid option: expected one of "discovery"/,
    );
    const noBudget = await runCli(['shared', '--budget', '0'], { env });
    expect([noBudget.code, noBudget.stderr]).toEqual([
      2,
      'ctxbus: error: --budget: Too small: expected number to be >=1\n',
    ]);
    const typo = await runCli(['write', '--typ', 'status'], { env });
    expect([typo.code, typo.stderr]).toEqual([
      2,
      "ctxbus: error: unknown option '--typ' (Did you mean --type?) (add --help for usage)\n",
    ]);
    const badToken = await runCli(['write', '--type', 'status', '--title', 'x'], {
      env: { ...env, CTXBUS_TOKEN: 'cbx_not_a_token' },
    });
    expect(badToken.code).toBe(3);
    expect(badToken.stderr.trim().split('\n')).toHaveLength(1);
    const stdin = await runCli(['write', '--file', '-'], {
      env,
      input: '{"type":"alert","title":"from stdin","urgency":"attention"}',
    });
    expect(stdin.code).toBe(0);
    // A pipe from a slower writer, past a pipe's 64 KiB: read to its end (read at once, a
    // non-blocking stdin failed with EAGAIN, exit 2).
    const big = join(dataDir, 'big.txt');
    writeFileSync(big, 'x'.repeat(90_000));
    const piped = await new Promise<{ failed: unknown; stdout: string; stderr: string }>(
      (resolve) =>
        execFile(
          'sh',
          [
            '-c',
            '(sleep 0.3; cat "$1") | "$2" "$3" write -t discovery --title piped --content-file - --json',
            'sh',
            big,
            process.execPath,
            CLI,
          ],
          { env: { ...process.env, ...env } },
          (failed, stdout, stderr) => resolve({ failed, stdout, stderr }),
        ),
    );
    expect(piped.failed, piped.stderr).toBeNull();
    expect(JSON.parse(piped.stdout).items[0].content).toHaveLength(90_000);
  });

  it('reads, searches and shares what was written, and delegates', async () => {
    const read = await runCli(['read', '--type', 'status'], { env });
    expect(read.stdout).toMatch(/^#\d+ status from file 2/);
    // No runtime here runs commands: the task is REJECTED as it is created, a failure even
    // without waiting, with the router's reason.
    const rejected = await runCli(['delegate', '--no-wait', '--', 'echo', 'hi'], { env });
    expect(rejected.code).toBe(1);
    expect(rejected.stdout).toMatch(/^routing: \w+ -> no runtime: /m);
    expect(rejected.stderr).toMatch(/^ctxbus: error: task \S+ ended REJECTED: \S/);
    expect(rejected.stderr).not.toContain('no reason given');
    // Knowledge keys by prefix, written with or without the trailing slash.
    const keyed = await runCli(
      ['write', '--type', 'decision', '--title', 'Session store', '--key', 'sessions/store'],
      { env },
    );
    expect(keyed.code, keyed.stderr).toBe(0);
    for (const prefix of ['sessions/', 'sessions']) {
      const byPrefix = await runCli(['read', '--key-prefix', prefix], { env });
      expect(byPrefix.code, byPrefix.stderr).toBe(0);
      expect(byPrefix.stdout).toContain('Session store');
    }
    const search = await runCli(['search', 'what', 'package', 'manager', 'tooling', '--json'], {
      env,
    });
    expect(JSON.parse(search.stdout).results[0].item.id).toBe(item.id);
    const shared = await runCli(['shared', '--runtime', 'openclaw', '--budget', '500'], { env });
    expect(shared.stdout).toContain('RECENT DECISIONS:');
    // A budget that cuts the bundle says so beside it (stderr), down to one that fits nothing.
    const cut = await runCli(['shared', '--budget', '40'], { env });
    expect(cut.code, cut.stderr).toBe(0);
    expect(cut.stderr).toMatch(/^ctxbus: cut to fit 40 tokens \(\d+ before\)/);
    const none = await runCli(['shared', '--budget', '1'], { env });
    expect([none.code, none.stdout]).toEqual([0, '\n']);
    expect(none.stderr).toMatch(/^ctxbus: nothing fits a budget of 1 token \(the bundle is \d+\)/);
    const got = await runCli(['get', item.id, '--json'], { env });
    expect(JSON.parse(got.stdout).id).toBe(item.id);
    const consumed = await runCli(['consume', item.id], {
      env: { ...env, CTXBUS_TOKEN: chatToken },
    });
    expect(consumed.stdout).toContain('by openclaw');
  });

  it('watches the stream from the start, in order', async () => {
    const watch = spawnCli(['watch', '--json', '--since', '0'], { env });
    let seen = '';
    watch.child.stdout?.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
    });
    await expect.poll(() => seen.split('\n').length).toBeGreaterThan(5);
    watch.child.kill('SIGINT');
    const watched = await watch.done;
    expect(watched.code).toBe(0);
    const lines = watched.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines[0]).toMatchObject({ event: 'context-added', item: { title: 'Use pnpm' } });
    expect(lines.map((line) => line.seq)).toEqual(
      [...lines.map((line) => line.seq)].sort((a, b) => a - b),
    );
    expect(lines.some((line) => line.event === 'context-consumed')).toBe(true);
  });

  describe("a new local hub's admin token, kept for this user's CLI: no token is copied by hand", () => {
    const configDir = tempDir('ctxbus-config-');
    const project = tempDir('ctxbus-project-');
    // HOME too: the installer writes Claude Code's state file (~/.claude.json).
    const env = { CTXBUS_CONFIG_DIR: configDir, HOME: tempDir('ctxbus-home-') };
    dirs.push(configDir, project, env.HOME);
    let local: HubProcess;
    // What the install test leaves for the doctor and uninstall tests.
    let settings: { env: { CTXBUS_URL: string; CTXBUS_TOKEN: string } };
    let installTokens: () => Promise<{ label: string | null; revokedAt: string | null }[]>;
    beforeAll(async () => {
      local = await startHubProcess({ env });
    });
    afterAll(async () => {
      expect(await local.stop()).toBe(0);
    });

    it('keeps the admin token; --save keeps a runtime token; refusals name the flags', async () => {
      const path = join(configDir, 'credentials.json');
      expect(statSync(path).mode & 0o777).toBe(0o600);
      expect(statSync(configDir).mode & 0o777).toBe(0o700);
      expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({
        version: 1,
        defaultHub: local.url,
        hubs: { [local.url]: { adminToken: local.adminToken } },
      });

      // Admin commands find the hub and its admin token; --save keeps a runtime token.
      const saved = await runCli(
        ['token', 'create', '--team', 'acme', '--runtime', 'cli', '--save'],
        { env },
      );
      expect(saved.code).toBe(0);
      expect(saved.stderr).toContain(`saved for ${local.url} in ${path}`);
      const written = await runCli(
        ['write', '--type', 'decision', '--title', 'Keep tokens out of shell history'],
        { env },
      );
      expect(written.code).toBe(0);
      const read = await runCli(['read', '--json'], { env });
      expect(JSON.parse(read.stdout).items[0]).toMatchObject({
        title: 'Keep tokens out of shell history',
        teamId: 'acme',
        source: { runtime: 'cli' },
      });
      // What another runtime wrote reaches the terminal as text, never as escape sequences.
      const hostile = await runCli(
        [
          'write',
          '--type',
          'status',
          '--title',
          'build \u001b[8mhidden \u001b]52;c;ZXZpbA==\u0007 done',
        ],
        { env },
      );
      expect(hostile.code, hostile.stderr).toBe(0);
      // A refused request names the flags the person typed, not the API's fields.
      const badType = await runCli(['write', '--type', 'decison', '--title', 'x'], { env });
      expect(badType.code).toBe(2);
      expect(badType.stderr).toMatch(/^ctxbus: error: --type: Invalid option/);
      const badLimit = await runCli(['read', '--limit', '0'], { env });
      expect(badLimit.stderr).toMatch(/^ctxbus: error: --limit: Too small/);
      const shown = await runCli(['read'], { env });
      expect(shown.stdout).toContain('build \\x1b[8mhidden \\x1b]52;c;ZXZpbA==\\x07 done');
      for (const raw of ['\u001b', '\u0007']) expect(shown.stdout).not.toContain(raw);
    });

    it('installs Claude Code with a token of its own, once, and refuses a missing project', async () => {
      // The installer mints Claude Code's own token, in the team of the CLI's token.
      const installed = await runCli(['install', 'claude-code', '--project', project], { env });
      expect(installed.code).toBe(0);
      expect(installed.stdout).toContain('with a new token for acme/claude-code');
      settings = JSON.parse(readFileSync(join(project, '.claude', 'settings.local.json'), 'utf8'));
      expect(settings.env.CTXBUS_URL).toBe(local.url);
      const shared = await runCli(['shared', '--json'], {
        env: { ...env, CTXBUS_TOKEN: settings.env.CTXBUS_TOKEN },
      });
      expect(JSON.parse(shared.stdout)).toMatchObject({ runtime: 'claude-code' });
      expect(shared.stdout).toContain('Keep tokens out of shell history');
      // Installing again keeps the token it installed (the hub still takes it): no new one.
      const again = await runCli(['install', 'claude-code', '--project', project], { env });
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).not.toContain('new token');
      installTokens = async () =>
        (
          JSON.parse((await runCli(['token', 'list', '--json', '--all'], { env })).stdout)
            .tokens as { label: string | null; revokedAt: string | null }[]
        ).filter((info) => info.label?.startsWith('ctxbus install claude-code'));
      expect(await installTokens()).toEqual([
        expect.objectContaining({
          label: `ctxbus install claude-code project ${project}`,
          revokedAt: null,
        }),
      ]);
      expect(
        JSON.parse(readFileSync(join(project, '.claude', 'settings.local.json'), 'utf8')).env
          .CTXBUS_TOKEN,
      ).toBe(settings.env.CTXBUS_TOKEN);
      // A project directory that does not exist is refused, in one line, before anything is made.
      const missing = join(project, 'no-such-dir');
      const refused = await runCli(['install', 'claude-code', '--project', missing], { env });
      expect(refused.code).toBe(2);
      expect(refused.stderr.trim()).toBe(`ctxbus: error: --project ${missing}: no such directory`);
      expect(existsSync(missing)).toBe(false);
    });

    it('doctor checks it all, changing nothing, and says how to fix what fails', async () => {
      const healthy = await runCli(['doctor', '--project', project], { env });
      expect(healthy.code, healthy.stdout).toBe(0);
      expect(healthy.stdout).toContain(`ok    hub: ${local.url} answers`);
      expect(healthy.stdout).toContain('ok    CLI token: valid, acts as acme/cli');
      expect(healthy.stdout).toMatch(
        /ok {4}Claude Code \(project .*\): hooks and MCP server installed, token acts as acme\/claude-code/,
      );
      // OpenClaw, read from its config file without starting it: absent, then installed.
      expect(healthy.stdout).toContain('--    OpenClaw: ctxbus is not connected to it here');
      const openclawConfig = join(env.HOME, '.openclaw', 'openclaw.json');
      mkdirSync(join(env.HOME, '.openclaw'), { recursive: true });
      writeFileSync(
        openclawConfig,
        `// JSON5, as OpenClaw writes it\n{ plugins: { entries: { ctxbus: { enabled: true, config: { url: '${local.url}', token: '${settings.env.CTXBUS_TOKEN}' } } } } }\n`,
      );
      const withOpenClaw = await runCli(['doctor', '--project', project], { env });
      expect(withOpenClaw.stdout).toContain(
        `ok    OpenClaw: the ctxbus plugin in ${openclawConfig}, token acts as acme/claude-code on ${local.url}`,
      );
      rmSync(join(env.HOME, '.openclaw'), { recursive: true, force: true });
      const broken = tempDir('ctxbus-project-');
      dirs.push(broken);
      expect(
        (
          await runCli(
            ['install', 'claude-code', '--project', broken, '--token', 'cbx_not_a_real_token'],
            { env },
          )
        ).code,
      ).toBe(0);
      const sick = await runCli(['doctor', '--project', broken], { env });
      expect(sick.code).toBe(1);
      expect(sick.stdout).toMatch(/FAIL {2}Claude Code \(project .*\): .*token/i);
      expect(sick.stdout).toContain(
        `fix: run \`ctxbus install claude-code --project ${broken}\` again`,
      );
      expect(sick.stderr.trim()).toBe('ctxbus: error: 1 check failed');
    });

    it('uninstall revokes what install minted; a missing Codex or admin token is one line', async () => {
      // Uninstall takes out what install added, ~/.claude.json's entry for the project too, and
      // revokes the token install minted: nothing keeps working after it.
      const removed = await runCli(
        ['install', 'claude-code', '--project', project, '--uninstall'],
        {
          env,
        },
      );
      expect(removed.code, removed.stderr).toBe(0);
      expect(removed.stdout).toMatch(/; revoked acme\/claude-code \(/);
      expect(await installTokens()).toEqual([
        expect.objectContaining({ revokedAt: expect.any(String) }),
      ]);
      const revoked = await runCli(['shared', '--json'], {
        env: { ...env, CTXBUS_TOKEN: settings.env.CTXBUS_TOKEN },
      });
      expect(revoked.code).toBe(3);
      // Codex missing: install codex says so (not found, 4) before it mints or saves a token.
      const noCodex = await runCli(
        ['install', 'codex', '--codex', join(project, 'no-codex'), '--team', 'acme'],
        { env },
      );
      expect(noCodex.code).toBe(4);
      expect(noCodex.stderr).toMatch(/no-codex not found: install the Codex CLI/);
      expect(
        JSON.parse((await runCli(['token', 'list', '--json'], { env })).stdout).tokens.filter(
          (info: { runtime: string | null }) => info.runtime === 'codex',
        ),
      ).toEqual([]);
      expect(readFileSync(join(configDir, 'credentials.json'), 'utf8')).not.toContain('codex');
      const claudeState = join(env.HOME, '.claude.json');
      expect(
        existsSync(claudeState)
          ? JSON.parse(readFileSync(claudeState, 'utf8')).projects?.[project]
          : undefined,
      ).toBeUndefined();

      // Without an admin token the installer says what it needs, in one line.
      const elsewhere = await runCli(['install', 'claude-code', '--project', project], {
        env: { ...env, CTXBUS_CONFIG_DIR: tempDir('ctxbus-config-'), CTXBUS_URL: local.url },
      });
      expect(elsewhere.code).toBe(2);
      expect(elsewhere.stderr.trim().split('\n')).toHaveLength(1);
      expect(elsewhere.stderr).toMatch(/no token for claude-code: pass --token, or an admin token/);
    });
  });

  it('checks and shows capabilities.yaml, naming the line and column of a mistake', async () => {
    const file = fileURLToPath(new URL('../../../capabilities.yaml', import.meta.url));
    const checked = await runCli(['capabilities', 'check', file]);
    expect(checked.code, checked.stderr).toBe(0);
    expect(checked.stdout).toBe(`${file}: ok, 4 runtimes, 5 capabilities\n`);
    const shown = await runCli(['capabilities', 'show', file]);
    expect(shown.stdout.split('\n')[0]).toMatch(/^capability +claude-code +openclaw +codex +web$/);
    expect(shown.stdout).toMatch(
      /^code_execution +native \(Bash\) +via-api \(remote-exec\) +native \(exec_command\) +sandboxed/m,
    );
    const json = JSON.parse((await runCli(['capabilities', 'show', file, '--json'])).stdout);
    expect(json.runtimes.openclaw.capabilities.code_execution).toMatchObject({
      mode: 'via-api',
      target: 'claude-code',
    });
    const dir = tempDir();
    dirs.push(dir);
    const bad = join(dir, 'capabilities.yaml');
    writeFileSync(bad, 'version: 1\nruntimes:\n  bot:\n    description: x\n    trust: total\n');
    // Entries ending in ... are permission to run code (but an interpreter's script entry): a
    // warning each, not an error.
    const warned = join(dir, 'warned.yaml');
    writeFileSync(
      warned,
      'version: 1\nruntimes:\n  box:\n    description: x\napprovers: [cli, codex]\nremote_execution:\n  allow: ["python3 ...", "npm test ...", "make test ...", "node scripts/check.js ...", "git status"]\n',
    );
    const warnings = await runCli(['capabilities', 'check', warned]);
    expect(warnings.code, warnings.stderr).toBe(0);
    const lines = warnings.stderr.trim().split('\n');
    expect(lines).toHaveLength(4);
    // An agent runtime among the approvers could release any command.
    expect(lines[0]).toMatch(/warning: approvers: codex is an agent runtime: its agents could/);
    expect(lines[1]).toMatch(/warning: .*"python3 \.\.\." lets the interpreter python take free/);
    expect(lines[2]).toMatch(
      /warning: .*"npm test \.\.\." lets npm take free arguments: every option/,
    );
    expect(lines[3]).toMatch(/warning: .*"make test \.\.\." lets make take free arguments/);
    const refused = await runCli(['capabilities', 'check', bad]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      new RegExp(
        `^ctxbus: error: ${bad.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:5:12: runtimes\\.bot\\.trust: `,
      ),
    );
  });

  it('fails with one clear line and the documented exit codes', async () => {
    const noUrl = await runCli(['read']);
    expect(noUrl.code).toBe(2);
    expect(noUrl.stderr.trim()).toBe(
      'ctxbus: error: no hub URL: pass --url, set CTXBUS_URL, or start a hub here with `ctxbus serve` (it saves its URL)',
    );
    const noScheme = await runCli(['read', '--url', '127.0.0.1:7420', '--token', 'cbx_x']);
    expect(noScheme.code).toBe(2);
    expect(noScheme.stderr.trim()).toBe(
      'ctxbus: error: --url must be an http(s) URL such as http://127.0.0.1:7420 (got "127.0.0.1:7420")',
    );
    // A flag given empty (an unset variable) is refused, not replaced by the environment's or
    // the saved identity.
    for (const args of [
      ['read', '--url', '', '--token', 'cbx_x'],
      ['read', '--url', 'http://127.0.0.1:9', '--token', ''],
    ]) {
      const empty = await runCli(args, {
        env: { CTXBUS_TOKEN: 'cbx_env', CTXBUS_URL: 'http://127.0.0.1:9' },
      });
      const flag = args[2] === '' ? '--url' : '--token';
      expect([empty.code, empty.stderr]).toEqual([
        2,
        `ctxbus: error: ${flag} is empty (an unset variable?)\n`,
      ]);
    }
    // The stdio MCP server says a URL that is no hub's at once (it answered each call later).
    for (const [args, env, label] of [
      [['mcp', '--url', 'ftp://x', '--token', 'cbx_x'], {}, '--url'],
      [['mcp', '--token', 'cbx_x'], { CTXBUS_URL: 'not a url' }, 'CTXBUS_URL'],
    ] as const) {
      const mcp = await runCli([...args], { env });
      expect([mcp.code, mcp.stderr.split(' (got')[0]]).toEqual([
        2,
        `ctxbus: error: ${label} must be an http(s) URL such as http://127.0.0.1:7420`,
      ]);
    }
    // A mistyped data directory: a read finds no database (exit 4) and makes none.
    const parent = tempDir();
    dirs.push(parent);
    const nowhere = join(parent, 'not-there');
    const noStore = await runCli(['token', 'list', '--data', nowhere]);
    expect(noStore.code).toBe(4);
    expect(noStore.stderr).toMatch(
      /^ctxbus: error: no ctxbus database in .*not-there .*check --data\n$/,
    );
    expect(existsSync(nowhere)).toBe(false);
    const unreachable = await runCli(['read', '--url', 'http://127.0.0.1:9', '--token', 'cbx_x']);
    expect(unreachable.code).toBe(6);
    expect(unreachable.stderr.trim().split('\n')).toHaveLength(1);
    expect(unreachable.stderr).toMatch(/cannot reach the ctxbus hub at http:\/\/127\.0\.0\.1:9/);
    // A closed port (9 is one fetch refuses to dial): refused, said in words, with what to do;
    // read, write (another transport) and watch (which never connected) say it alike.
    const closed = `http://127.0.0.1:${await freePort()}`;
    const told = `ctxbus: error: cannot reach the ctxbus hub at ${closed} (connection refused): is it running? Start one with \`ctxbus serve --port ${new URL(closed).port}\`, or give its address with --url or CTXBUS_URL\n`;
    for (const args of [['read'], ['write', '--type', 'status', '--title', 't'], ['watch']]) {
      const refused = await runCli([...args, '--url', closed, '--token', 'cbx_x']);
      expect([refused.code, refused.stderr], args[0]).toEqual([6, told]);
    }
    // A hub that takes the connection and never answers: watch says so (exit 6), as read does.
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    try {
      const quiet = await runCli(['watch', '--url', silentUrl, '--token', 'cbx_x']);
      expect(quiet.code).toBe(6);
      expect(quiet.stderr).toMatch(
        /^ctxbus: error: cannot reach the ctxbus hub at .*no answer in 10000 ms/,
      );
    } finally {
      silent.close();
    }
    // A mistyped data directory: audit verify finds no database either, and makes none.
    const noAudit = await runCli(['audit', 'verify', '--data', nowhere, '--team', 'acme']);
    expect(noAudit.code).toBe(4);
    expect(noAudit.stderr).toMatch(/no ctxbus database in .*not-there .*check --data/);
    expect(existsSync(nowhere)).toBe(false);
    // --file holds whole items: an item flag beside it is refused, not dropped.
    const beside = await runCli(['write', '--file', '-', '--type', 'alert', '--title', 'x'], {
      input: '{"type":"decision","title":"from the file"}',
    });
    expect(beside.code).toBe(2);
    expect(beside.stderr).toMatch(/--file holds whole items: give --type, --title in the file/);
    // A token of two lines (read from a two-line file) is a mistake in the token, said without
    // it, on every transport; not "cannot reach the hub" with the secret in the message.
    const twoLines = 'cbx_first_line\ncbx_second_line';
    for (const args of [
      ['read'],
      ['write', '--type', 'status', '--title', 't'],
      ['watch'],
      ['capabilities', 'show', '--hub'],
    ]) {
      const refused = await runCli([...args, '--url', closed, '--token', twoLines]);
      expect(refused.code, args.join(' ')).toBe(2);
      expect(refused.stderr, args.join(' ')).toMatch(
        /^ctxbus: error: the token is not one line of visible characters .*\n$/,
      );
      expect(refused.stderr).not.toContain('cbx_first_line');
    }
    const missingTitle = await runCli([
      'write',
      '--type',
      'decision',
      '--url',
      'http://127.0.0.1:9',
      '--token',
      'x',
    ]);
    expect(missingTitle.code).toBe(2);
    const badPort = await runCli(['serve', '--port', '70000', '--data', tempDir()]);
    expect(badPort.code).toBe(2);
    expect(badPort.stderr).toMatch(/--port must be 0-65535/);
  });
});
