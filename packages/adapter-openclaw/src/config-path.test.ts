import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { knownConfigPath } from './config-path.js';

// Where OpenClaw's config is, without starting OpenClaw: the documented rules, and null
// (ask `openclaw config file`) for every case they do not settle. test/e2e
// (openclaw-config-path.test.ts) checks the answers against the real OpenClaw.

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'ctxbus-openclaw-config-path-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** Creates `path` (and its folders) with `text`; returns it. */
function file(path: string, text = '{}\n'): string {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text);
  return path;
}

describe('knownConfigPath', () => {
  it('is ~/.openclaw/openclaw.json, with ~ being OPENCLAW_HOME, else HOME', () => {
    const config = file(join(root, 'home', '.openclaw', 'openclaw.json'));
    expect(knownConfigPath({ HOME: join(root, 'home') })).toBe(config);
    const other = file(join(root, 'svc', '.openclaw', 'openclaw.json'));
    expect(knownConfigPath({ HOME: join(root, 'home'), OPENCLAW_HOME: join(root, 'svc') })).toBe(
      other,
    );
    // Blank, "undefined" and "null" are unset, as OpenClaw reads them.
    expect(knownConfigPath({ HOME: join(root, 'home'), OPENCLAW_HOME: ' null ' })).toBe(config);
  });

  it('is $OPENCLAW_STATE_DIR/openclaw.json, and OPENCLAW_CONFIG_PATH over both', () => {
    file(join(root, 'home', '.openclaw', 'openclaw.json'));
    const state = file(join(root, 'state', 'openclaw.json'));
    const env = { HOME: join(root, 'home'), OPENCLAW_STATE_DIR: join(root, 'state') };
    expect(knownConfigPath(env)).toBe(state);
    const explicit = file(join(root, 'elsewhere', 'a.json'));
    expect(
      knownConfigPath({
        ...env,
        OPENCLAW_CONFIG_PATH: join(root, 'elsewhere', '..', 'elsewhere', 'a.json'),
      }),
    ).toBe(explicit);
  });

  it('is null (ask OpenClaw) where the rules do not settle it', () => {
    const home = join(root, 'home');
    // No config yet: OpenClaw would look at legacy names and folders next.
    expect(knownConfigPath({ HOME: home })).toBeNull();
    expect(knownConfigPath({ HOME: home, OPENCLAW_STATE_DIR: join(root, 'state') })).toBeNull();
    file(join(home, '.openclaw', 'openclaw.json'));
    // A profile, relative or ~ paths, no home.
    expect(knownConfigPath({ HOME: home }, 'work')).toBeNull();
    expect(knownConfigPath({ HOME: home, OPENCLAW_PROFILE: 'work' })).toBeNull();
    expect(knownConfigPath({ HOME: home, OPENCLAW_CONFIG_PATH: 'openclaw.json' })).toBeNull();
    expect(knownConfigPath({ HOME: home, OPENCLAW_STATE_DIR: '~/.openclaw' })).toBeNull();
    expect(knownConfigPath({ HOME: home, OPENCLAW_HOME: '~/svc' })).toBeNull();
    expect(knownConfigPath({})).toBeNull();
    // A symlinked config (OpenClaw's writes replace the link).
    symlinkSync(join(home, '.openclaw', 'openclaw.json'), join(root, 'link.json'));
    expect(
      knownConfigPath({ HOME: home, OPENCLAW_CONFIG_PATH: join(root, 'link.json') }),
    ).toBeNull();
  });

  it('is null when an env file OpenClaw loads sets one of its variables', () => {
    const home = join(root, 'home');
    const config = file(join(home, '.openclaw', 'openclaw.json'));
    file(join(home, '.openclaw', '.env'), 'OPENAI_API_KEY=sk-1\n');
    expect(knownConfigPath({ HOME: home })).toBe(config);
    file(join(home, '.openclaw', '.env'), `OPENCLAW_CONFIG_PATH=${join(root, 'other.json')}\n`);
    expect(knownConfigPath({ HOME: home })).toBeNull();
    rmSync(join(home, '.openclaw', '.env'));
    file(join(home, '.config', 'openclaw', 'gateway.env'), 'export OPENCLAW_STATE_DIR=/srv/claw\n');
    expect(knownConfigPath({ HOME: home })).toBeNull();
    // The process's own OPENCLAW_CONFIG_PATH wins over env files.
    expect(knownConfigPath({ HOME: home, OPENCLAW_CONFIG_PATH: config })).toBe(config);
  });
});
