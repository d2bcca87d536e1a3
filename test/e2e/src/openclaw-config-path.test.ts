import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { knownConfigPath } from '@ctxbus/adapter-openclaw';
import { removeDir, tempDir } from '@ctxbus/test-kit';
import { afterAll, describe, expect } from 'vitest';
import { OPENCLAW_BIN, OPENCLAW_QUIET_ENV } from './openclaw-harness.js';
import { because, openClawIt } from './openclaw-installed.js';

// ctxbus reads OpenClaw's config where OpenClaw's documented rules put it instead of starting
// OpenClaw to ask (`openclaw config file`, 1-3 s a start): the real OpenClaw must print the
// same path for each layout those rules settle, and one it does not (its global .env moving
// the config) must be left to OpenClaw.

const root = tempDir('ctxbus-e2e-openclaw-config-path-');
afterAll(() => removeDir(root));

/** Creates a config file (and its folders) at `path`; returns it. */
function config(path: string, text = '{}\n'): string {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text);
  return path;
}

/** What `openclaw config file` prints with only `env` (and PATH, quiet settings). */
function openclawConfigFile(env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      OPENCLAW_BIN,
      ['config', 'file'],
      { env: { PATH: process.env.PATH, ...OPENCLAW_QUIET_ENV, ...env }, cwd: root },
      (error, stdout, stderr) =>
        error ? reject(new Error(`${error.message}: ${stderr}`)) : resolve(stdout.trim()),
    );
  });
}

describe(`OpenClaw's config file, found without starting OpenClaw${because}`, () => {
  openClawIt('is where the real `openclaw config file` says, or left to it', async () => {
    const home = join(root, 'home');
    config(join(home, '.openclaw', 'openclaw.json'));
    config(join(root, 'svc', '.openclaw', 'openclaw.json'));
    config(join(root, 'state', 'openclaw.json'));
    config(join(root, 'explicit', 'a.json'));
    const settled: Record<string, string>[] = [
      { HOME: home },
      { HOME: home, OPENCLAW_HOME: join(root, 'svc') },
      { HOME: home, OPENCLAW_STATE_DIR: join(root, 'state') },
      { HOME: home, OPENCLAW_CONFIG_PATH: join(root, 'explicit', '..', 'explicit', 'a.json') },
    ];
    const moved = join(root, 'moved');
    config(join(moved, '.openclaw', 'openclaw.json'));
    const elsewhere = join(root, 'elsewhere.json');
    config(join(moved, '.openclaw', '.env'), `OPENCLAW_CONFIG_PATH=${elsewhere}\n`);
    const [movedAnswer, ...answers] = await Promise.all(
      [{ HOME: moved }, ...settled].map(openclawConfigFile),
    );
    settled.forEach((env, at) => {
      expect(knownConfigPath(env), JSON.stringify(env)).toBe(answers[at]);
    });
    expect(new Set(answers).size).toBe(settled.length);
    // OpenClaw's global .env moved the config: ctxbus asks OpenClaw instead.
    expect(movedAnswer).toBe(elsewhere);
    expect(knownConfigPath({ HOME: moved })).toBeNull();
  });
});
