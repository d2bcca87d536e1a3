import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestHub } from '@ctxbus/test-kit';
import {
  call,
  removeDir,
  runCli,
  spawnCli,
  TEST_WAIT_MS,
  tempDir,
  workerPolicy,
} from '@ctxbus/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInProcessServe } from './in-process-serve.ts';

// One identity per role (issue 28): a worker's or the bot's token saved on this machine never
// becomes whom the person's CLI acts as, `ctxbus whoami` says who is who (no secrets), and the
// worker finds its own runtime's token.

const dirs: string[] = [];
let hub: TestHub;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  const configDir = tempDir('ctxbus-config-');
  env = { CTXBUS_CONFIG_DIR: configDir, HOME: tempDir('ctxbus-home-') };
  dirs.push(configDir, env.HOME as string);
  hub = await startInProcessServe({ env });
});

afterAll(async () => {
  expect(await hub.stop()).toBe(0);
  for (const dir of dirs) removeDir(dir);
});

describe('saved identities', () => {
  it("keeps the person's CLI identity apart from each runtime's, and says who is who", async () => {
    const before = await runCli(['whoami'], { env });
    expect(before.code).toBe(0);
    expect(before.stdout).toContain(`hub       ${hub.url} (the saved default)`);
    expect(before.stdout).toContain('cli       acts as no one');
    expect(before.stdout).toContain('admin     saved');

    const person = await runCli(
      ['token', 'create', '--team', 'acme', '--runtime', 'cli', '--save'],
      { env },
    );
    expect(person.code, person.stderr).toBe(0);
    expect(person.stderr).toContain("the CLI's own commands act as acme/cli");
    const worker = await runCli(
      ['token', 'create', '--team', 'acme', '--runtime', 'claude-code', '--save'],
      { env },
    );
    expect(worker.code, worker.stderr).toBe(0);
    expect(worker.stderr).toContain("as claude-code's token (ctxbus worker, ctxbus telegram)");
    expect(worker.stderr).toContain("the CLI's own commands still act as acme/cli");

    const who = await runCli(['whoami', '--json'], { env });
    expect(JSON.parse(who.stdout)).toMatchObject({
      cli: { from: 'saved', teamId: 'acme', runtime: 'cli' },
      admin: 'saved',
      runtimes: [
        { runtime: 'cli', teamId: 'acme' },
        { runtime: 'claude-code', teamId: 'acme' },
      ],
    });
    expect(who.stdout).not.toMatch(/cbx_/);

    // The person's writes are the person's.
    const written = await runCli(
      ['write', '--type', 'decision', '--title', 'Mine, not the agent'],
      {
        env,
      },
    );
    expect(written.code, written.stderr).toBe(0);
    const read = await runCli(['read', '--json'], { env });
    expect(JSON.parse(read.stdout).items[0]).toMatchObject({
      title: 'Mine, not the agent',
      source: { runtime: 'cli' },
    });

    // --as-cli switches on purpose, and says from whom.
    const switched = await runCli(
      ['token', 'create', '--team', 'acme', '--runtime', 'web', '--save', '--as-cli'],
      { env },
    );
    expect(switched.stderr).toContain(
      "the CLI's own commands act as acme/web (they acted as acme/cli)",
    );
    const refused = await runCli(
      ['token', 'create', '--team', 'acme', '--runtime', 'web', '--as-cli'],
      {
        env,
      },
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--as-cli goes with --save');

    // A runtime saved in another team (connect wired it in its own) shares nothing with the
    // CLI's: both the save and whoami say so, and how to join it.
    const elsewhere = await runCli(
      ['token', 'create', '--team', 'other', '--runtime', 'codex', '--save'],
      { env },
    );
    expect(elsewhere.code, elsewhere.stderr).toBe(0);
    const note =
      'the CLI acts in team acme, saved runtimes in team other: what the CLI writes is not in their context';
    expect(elsewhere.stderr).toContain(`note: ${note}`);
    const told = await runCli(['whoami'], { env });
    expect(told.stdout).toContain(`note      ${note}`);
    expect(told.stdout).toContain('ctxbus token create --team other --runtime cli --save');

    // Without --team, a token joins the team the saved ones act in (the CLI's): one team.
    const joined = await runCli(['token', 'create', '--runtime', 'openclaw', '--save'], { env });
    expect(joined.code, joined.stderr).toBe(0);
    const after = JSON.parse((await runCli(['whoami', '--json'], { env })).stdout);
    expect(after.runtimes).toContainEqual({ runtime: 'openclaw', teamId: 'acme' });
  });

  it("runs a worker with its runtime's saved token, not the CLI's", async () => {
    const root = tempDir('ctxbus-worker-root-');
    dirs.push(root);
    const policy = join(root, 'capabilities.yaml');
    writeFileSync(policy, workerPolicy(root, ['true']));
    const run = spawnCli(
      [
        'worker',
        '--capabilities',
        policy,
        '--root',
        root,
        '--id',
        'identities-worker',
        '--runtime',
        'claude-code',
      ],
      { env },
    );
    try {
      const admin = hub.adminToken ?? '';
      await expect
        .poll(
          async () => {
            const view = await call(hub.url, 'GET', '/api/capabilities?team=acme', {
              token: admin,
            });
            const runtimes = (view.body.runtimes ?? []) as {
              id: string;
              presence: { workers: number };
            }[];
            return runtimes.find((entry) => entry.id === 'claude-code')?.presence.workers ?? 0;
          },
          { timeout: TEST_WAIT_MS, interval: 200 },
        )
        .toBe(1);
    } finally {
      run.child.kill('SIGTERM');
      const ended = await run.done;
      expect(ended.stderr).not.toContain('several runtime tokens');
    }
    // Without --runtime, with two runtimes saved beside the CLI's, it asks which.
    const ambiguous = await runCli(['worker', '--capabilities', policy, '--root', root], { env });
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toContain('several runtime tokens are saved');
    // On a machine with no token saved yet, it says how to save the runtime's, not the CLI's.
    const fresh = tempDir('ctxbus-config-');
    dirs.push(fresh);
    const none = await runCli(
      ['worker', '--url', hub.url, '--capabilities', policy, '--root', root, '--runtime', 'codex'],
      { env: { ...env, CTXBUS_CONFIG_DIR: fresh } },
    );
    expect(none.code).toBe(2);
    expect(none.stderr).toContain(`no codex token saved for ${hub.url} (saved: none)`);
    expect(none.stderr).toContain('--runtime codex --save');
    expect(none.stderr).not.toContain('--as-cli');
  });
});
