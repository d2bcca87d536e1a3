import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { hubCredentials, readCredentials, saveHubCredentials } from './credentials.js';
import { parseHubUrl } from './hub-target.js';

const root = mkdtempSync(join(tmpdir(), 'ctxbus-credentials-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let count = 0;
const fresh = () => join(root, String(++count), 'credentials.json');

describe('credentials file', () => {
  it('is empty until saved, then merges per hub and keeps the first hub as default', () => {
    const path = fresh();
    expect(readCredentials(path)).toEqual({ version: 1, defaultHub: null, hubs: {} });
    saveHubCredentials('http://127.0.0.1:7420/', { adminToken: 'cbx_admin' }, { path });
    saveHubCredentials('http://127.0.0.1:7420', { token: 'cbx_cli', teamId: 'acme' }, { path });
    saveHubCredentials('http://127.0.0.1:9000', { adminToken: 'cbx_other' }, { path });
    expect(readCredentials(path)).toEqual({
      version: 1,
      defaultHub: 'http://127.0.0.1:7420',
      hubs: {
        'http://127.0.0.1:7420': { adminToken: 'cbx_admin', token: 'cbx_cli', teamId: 'acme' },
        'http://127.0.0.1:9000': { adminToken: 'cbx_other' },
      },
    });
    expect(hubCredentials('http://127.0.0.1:9000/api', path)).toEqual({ adminToken: 'cbx_other' });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    saveHubCredentials('http://127.0.0.1:9000', {}, { path, makeDefault: true });
    expect(readCredentials(path).defaultHub).toBe('http://127.0.0.1:9000');
  });

  it('refuses a broken file with its path and what to do, and leaves it as it was', () => {
    const path = fresh();
    saveHubCredentials('http://127.0.0.1:7420', { adminToken: 'cbx_a' }, { path });
    writeFileSync(path, '{"version": 1, "hubs": ');
    expect(() => readCredentials(path)).toThrow(`${path} is not JSON: fix or delete it`);
    expect(() => saveHubCredentials('http://127.0.0.1:7420', { token: 'x' }, { path })).toThrow(
      /is not JSON/,
    );
    expect(readFileSync(path, 'utf8')).toBe('{"version": 1, "hubs": ');
    writeFileSync(path, JSON.stringify({ version: 2, defaultHub: null, hubs: {} }));
    expect(() => readCredentials(path)).toThrow(/credentials\.json: version: .*fix or delete it/);
  });

  it('names the first bad path of a file that is JSON but not credentials', () => {
    const path = fresh();
    saveHubCredentials('http://127.0.0.1:7420', {}, { path });
    const file = (hubs: unknown, extra: Record<string, unknown> = {}) =>
      writeFileSync(path, JSON.stringify({ version: 1, defaultHub: null, hubs, ...extra }));
    const hub = 'http://127.0.0.1:7420';
    const cases: [unknown, Record<string, unknown>, RegExp][] = [
      [
        { [hub]: { token: '' } },
        {},
        /hubs\.http:\/\/127\.0\.0\.1:7420\.token: expected a non-empty string/,
      ],
      [{ [hub]: { token: 'x', colour: 'red' } }, {}, /hubs\..*\.colour: unknown field/],
      [{ [hub]: { runtimes: { codex: { token: 'x' } } } }, {}, /runtimes\.codex\.teamId: expected/],
      [{ [hub]: { runtimes: [] } }, {}, /runtimes: expected an object/],
      [[], {}, /hubs: expected an object/],
      [{}, { defaultHub: 7 }, /defaultHub: expected a string or null/],
      [{}, { extra: true }, /extra: unknown field/],
    ];
    for (const [hubs, extra, message] of cases) {
      file(hubs, extra);
      expect(() => readCredentials(path)).toThrow(message);
    }
    const saved = {
      [hub]: {
        adminToken: 'cbx_a',
        token: 'cbx_t',
        teamId: 'acme',
        runtime: 'cli',
        runtimes: { codex: { token: 'cbx_c', teamId: 'acme' } },
      },
    };
    file(saved, { defaultHub: hub });
    expect(readCredentials(path)).toEqual({ version: 1, defaultHub: hub, hubs: saved });
  });
});

describe('hub URLs', () => {
  it('takes http(s) URLs and says what is wrong with anything else', () => {
    expect(parseHubUrl('http://127.0.0.1:7420/', '--url')).toBe('http://127.0.0.1:7420');
    expect(parseHubUrl('https://hub.example.com', '--url')).toBe('https://hub.example.com');
    for (const bad of ['127.0.0.1:7420', 'localhost', 'ftp://x', 'http://', '']) {
      expect(() => parseHubUrl(bad, '--url')).toThrow(
        `--url must be an http(s) URL such as http://127.0.0.1:7420 (got "${bad}")`,
      );
    }
  });
});
