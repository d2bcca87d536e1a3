import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findHubTarget } from './hub-target.js';

const dir = mkdtempSync(join(tmpdir(), 'ctxbus-claude-target-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const HUB = 'http://127.0.0.1:7420';
writeFileSync(
  join(dir, 'credentials.json'),
  JSON.stringify({
    version: 1,
    defaultHub: HUB,
    hubs: {
      [HUB]: {
        token: 'cli-token',
        runtimes: { 'claude-code': { token: 'claude-token', teamId: 'team' } },
      },
    },
  }),
);

describe('the hub Claude Code talks to', () => {
  it('is the one its settings name when they give both URL and token', () => {
    const env = { CTXBUS_CONFIG_DIR: dir, CTXBUS_URL: 'http://h:1', CTXBUS_TOKEN: 't' };
    expect(findHubTarget(env)).toEqual({ url: 'http://h:1', token: 't' });
  });

  it('is the saved default hub with the claude-code token when nothing is in the environment', () => {
    expect(findHubTarget({ CTXBUS_CONFIG_DIR: dir })).toEqual({ url: HUB, token: 'claude-token' });
  });

  it('never takes a lone CTXBUS_TOKEN (the CLI identity of a shell) or the CLI token saved', () => {
    const env = { CTXBUS_CONFIG_DIR: dir, CTXBUS_TOKEN: 'cli-token' };
    expect(findHubTarget(env)).toEqual({ url: HUB, token: 'claude-token' });
    expect(findHubTarget({ CTXBUS_CONFIG_DIR: dir, CTXBUS_URL: 'http://other:1' })).toBeNull();
  });
});
