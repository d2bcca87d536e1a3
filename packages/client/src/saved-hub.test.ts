import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ctxbusConfigDir, savedHubTarget, savedRuntimeToken } from './saved-hub.js';

const dir = mkdtempSync(join(tmpdir(), 'ctxbus-saved-hub-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const env = { CTXBUS_CONFIG_DIR: dir };

function save(credentials: unknown): void {
  writeFileSync(join(dir, 'credentials.json'), JSON.stringify(credentials));
}

const HUB = 'http://127.0.0.1:7420';
const saved = {
  version: 1,
  defaultHub: HUB,
  hubs: {
    [HUB]: {
      token: 'cli-token',
      runtimes: { 'claude-code': { token: 'claude-token', teamId: 'team' } },
    },
    'http://127.0.0.1:9000': { runtimes: { codex: { token: 'codex-token', teamId: 'team' } } },
  },
};

describe('the saved hub of a runtime', () => {
  it('is the default hub with the runtime token saved there, never the CLI token', () => {
    save(saved);
    expect(savedHubTarget('claude-code', env)).toEqual({ url: HUB, token: 'claude-token' });
    expect(savedHubTarget('codex', env)).toBeNull();
    expect(savedHubTarget('cli', env)).toBeNull();
  });

  it('is the hub named by a URL, whatever its path, when one is given', () => {
    save(saved);
    expect(savedHubTarget('codex', env, 'http://127.0.0.1:9000/')).toEqual({
      url: 'http://127.0.0.1:9000',
      token: 'codex-token',
    });
    expect(savedRuntimeToken('http://127.0.0.1:9000/x', 'codex', env)).toBe('codex-token');
    expect(savedRuntimeToken(HUB, 'codex', env)).toBeNull();
  });

  it('is null, without throwing, when the file is missing, broken or shaped otherwise', () => {
    rmSync(join(dir, 'credentials.json'), { force: true });
    expect(savedHubTarget('claude-code', env)).toBeNull();
    writeFileSync(join(dir, 'credentials.json'), '{not json');
    expect(savedHubTarget('claude-code', env)).toBeNull();
    save({ version: 1, defaultHub: 'not a url', hubs: { x: 1 } });
    expect(savedHubTarget('claude-code', env)).toBeNull();
    save({ ...saved, defaultHub: null });
    expect(savedHubTarget('claude-code', env)).toBeNull();
  });

  it('lives where the CLI keeps its credentials', () => {
    expect(ctxbusConfigDir(env)).toBe(dir);
    expect(ctxbusConfigDir({ XDG_CONFIG_HOME: '/x' })).toBe('/x/ctxbus');
  });
});
