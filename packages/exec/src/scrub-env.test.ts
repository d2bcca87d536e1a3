import { describe, expect, it } from 'vitest';
import { runCommand } from './run-command.js';
import { DEFAULT_CHILD_PATH, deniedEnvReason, scrubEnv } from './scrub-env.js';
import { NODE, tempDir } from './test-support.js';

// The worker's own environment, full of what must never reach a command.
const workerEnv: Record<string, string> = {
  HOME: '/home/worker',
  LANG: 'en_US.UTF-8',
  LC_ALL: 'C.UTF-8',
  TERM: 'xterm',
  TZ: 'UTC',
  USER: 'worker',
  CI: 'true',
  PATH: '/evil/bin:/usr/bin',
  NODE_OPTIONS: '--require /tmp/evil.js',
  LD_PRELOAD: '/tmp/evil.so',
  LD_LIBRARY_PATH: '/tmp',
  DYLD_INSERT_LIBRARIES: '/tmp/evil.dylib',
  PYTHONPATH: '/tmp',
  BASH_ENV: '/tmp/evil.sh',
  ENV: '/tmp/evil.sh',
  HTTP_PROXY: 'http://proxy:1',
  https_proxy: 'http://proxy:2',
  ALL_PROXY: 'socks5://proxy:3',
  no_proxy: 'localhost',
  NODE_EXTRA_CA_CERTS: '/tmp/ca.pem',
  SSL_CERT_FILE: '/tmp/ca.pem',
  GITHUB_TOKEN: 'ghp_secret',
  NPM_TOKEN: 'npm_secret',
  DEPLOY_KEY: 'k',
  APP_SECRET: 's',
  DB_PASSWORD: 'p',
  AWS_ACCESS_KEY_ID: 'AKIA',
  AWS_REGION: 'eu-west-1',
  ANTHROPIC_API_KEY: 'sk-ant',
  ANTHROPIC_BASE_URL: 'http://x',
  CTXBUS_TOKEN: 'ctx',
  CTXBUS_URL: 'http://hub',
  GIT_SSH_COMMAND: 'evil',
  npm_config_script_shell: '/tmp/evil.sh',
  SOMETHING_ELSE: 'not allowed',
  EXTRA_SETTING: 'allowed explicitly',
};

const denied = Object.keys(workerEnv).filter(
  (name) =>
    ![
      'HOME',
      'LANG',
      'LC_ALL',
      'TERM',
      'TZ',
      'USER',
      'CI',
      'PATH',
      'SOMETHING_ELSE',
      'EXTRA_SETTING',
    ].includes(name),
);

async function childEnv(env: Record<string, string>): Promise<Record<string, string>> {
  const result = await runCommand({
    argv: [NODE, '-p', 'JSON.stringify(process.env)'],
    cwd: tempDir(),
    env,
    timeoutMs: 120_000,
    inactivityMs: 20_000,
    maxOutputBytes: 1024 * 1024,
  });
  expect(result.exitCode).toBe(0);
  return JSON.parse(result.stdout) as Record<string, string>;
}

describe('scrubEnv', () => {
  it('a child sees only the allow-list and the worker PATH, never the denied names, even when allowed and asked for', async () => {
    const { env, dropped } = scrubEnv({
      source: workerEnv,
      // Explicitly allowing a denied name does not let it through.
      extraNames: ['EXTRA_SETTING', 'NODE_OPTIONS', 'GITHUB_TOKEN', 'HTTP_PROXY', 'AWS_REGION'],
      requested: {
        PATH: '/request/bin',
        NODE_OPTIONS: '--inspect',
        LD_PRELOAD: '/x.so',
        HTTPS_PROXY: 'http://p',
        CTXBUS_TOKEN: 't',
        TZ: 'Europe/Paris',
        UNLISTED: 'x',
      },
      path: '/usr/bin:/bin',
    });
    const seen = await childEnv(env);
    expect(seen).toEqual({
      HOME: '/home/worker',
      LANG: 'en_US.UTF-8',
      LC_ALL: 'C.UTF-8',
      TERM: 'xterm',
      TZ: 'Europe/Paris',
      USER: 'worker',
      CI: 'true',
      EXTRA_SETTING: 'allowed explicitly',
      PATH: '/usr/bin:/bin',
    });
    for (const name of denied) expect(seen).not.toHaveProperty(name);
    expect(dropped.map((entry) => entry.name).sort()).toEqual(
      ['CTXBUS_TOKEN', 'HTTPS_PROXY', 'LD_PRELOAD', 'NODE_OPTIONS', 'PATH', 'UNLISTED'].sort(),
    );
  });

  it('the default PATH is the fixed one, not the worker PATH', async () => {
    const seen = await childEnv(scrubEnv({ source: workerEnv }).env);
    expect(seen.PATH).toBe(DEFAULT_CHILD_PATH);
  });

  it('denies in any case', () => {
    for (const name of ['http_proxy', 'Https_Proxy', 'ld_preload', 'node_options', 'Path']) {
      expect(deniedEnvReason(name), name).not.toBeNull();
    }
    for (const name of ['HOME', 'LANG', 'LC_CTYPE', 'TERM', 'CI', 'KEYBOARD']) {
      expect(deniedEnvReason(name), name).toBeNull();
    }
  });
});
