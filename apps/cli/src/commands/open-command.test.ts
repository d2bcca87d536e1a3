import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { removeDir, runCli, tempDir, useHubProcess, waitUntil } from '@ctxbus/test-kit';
import { afterAll, describe, expect, it } from 'vitest';
import { browserCommand } from './open-command.js';

// `ctxbus open` as the real command against a real hub, its "browser" a script that records
// what it was asked to open.

const hub = useHubProcess();
const dir = tempDir('ctxbus-open-');
afterAll(() => removeDir(dir));

describe('ctxbus open', () => {
  it('opens the dashboard URL, with no token in it, in $BROWSER', async () => {
    const opened = join(dir, 'opened.txt');
    const browser = join(dir, 'browser.sh');
    writeFileSync(browser, `#!/bin/sh\nprintf '%s' "$*" > '${opened}'\n`);
    chmodSync(browser, 0o755);
    const result = await runCli(['open', '--url', hub.url], { env: { BROWSER: browser } });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(`opened ${hub.url}/ (${browser})\n`);
    await waitUntil(
      () => existsSync(opened) && readFileSync(opened, 'utf8') !== '',
      'the browser script to run',
    );
    expect(readFileSync(opened, 'utf8')).toBe(`${hub.url}/`);
  });

  it('counts a browser that runs on as opened, and one that fails at once as no success', async () => {
    const opened = join(dir, 'running.txt');
    const running = join(dir, 'running.sh');
    writeFileSync(running, `#!/bin/sh\nprintf '%s' "$*" > '${opened}'\nexec sleep 30\n`);
    const failing = join(dir, 'failing.sh');
    writeFileSync(failing, '#!/bin/sh\necho "cannot open display" >&2\nexit 1\n');
    chmodSync(running, 0o755);
    chmodSync(failing, 0o755);
    const ran = await runCli(['open', '--url', hub.url], { env: { BROWSER: running } });
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toBe(`opened ${hub.url}/ (${running})\n`);
    expect(readFileSync(opened, 'utf8')).toBe(`${hub.url}/`);
    const failed = await runCli(['open', '--url', hub.url], { env: { BROWSER: failing } });
    expect(failed.code).toBe(0);
    expect(failed.stdout).toBe(`${hub.url}/\n`);
    expect(failed.stderr).toContain(`could not start a browser (${failing}: exited with 1)`);
  });

  it('--print prints the URL; a browser that cannot start still leaves the URL', async () => {
    const printed = await runCli(['open', '--url', hub.url, '--print']);
    expect(printed.code, printed.stderr).toBe(0);
    expect(printed.stdout).toBe(`${hub.url}/\n`);
    const missing = await runCli(['open', '--url', hub.url], {
      env: { BROWSER: join(dir, 'no-such-browser') },
    });
    expect(missing.code).toBe(0);
    expect(missing.stdout).toBe(`${hub.url}/\n`);
    expect(missing.stderr).toContain('could not start a browser');
  });

  it("with no browser on the machine, the platform's opener failing is no success", async () => {
    // No $BROWSER and no display: xdg-open finds nothing to open the URL with (exit 3), or is
    // not installed at all. Either way the command says so and leaves the URL.
    const result = await runCli(['open', '--url', hub.url], {
      env: { BROWSER: '', DISPLAY: '', WAYLAND_DISPLAY: '', PATH: '/usr/bin:/bin' },
    });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(`${hub.url}/\n`);
    expect(result.stderr).toMatch(/could not start a browser \(xdg-open: /);
  });

  it('a hub that is not running is exit 6 with the reason', async () => {
    const result = await runCli(['open', '--url', 'http://127.0.0.1:9', '--print']);
    expect(result.code).toBe(6);
    expect(result.stderr).toMatch(
      /^ctxbus: error: cannot reach the ctxbus hub at http:\/\/127\.0\.0\.1:9/,
    );
  });

  it('picks the platform opener when $BROWSER is not set', () => {
    expect(browserCommand('http://h/', {}, 'linux')).toEqual(['xdg-open', ['http://h/']]);
    expect(browserCommand('http://h/', {}, 'darwin')).toEqual(['open', ['http://h/']]);
    expect(browserCommand('http://h/', { BROWSER: 'firefox' }, 'linux')).toEqual([
      'firefox',
      ['http://h/'],
    ]);
  });
});
