import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { removeDir, runCli, tempDir } from '@ctxbus/test-kit';
import { afterAll, describe, expect, it } from 'vitest';
import { CAPABILITIES_EXAMPLE } from './capabilities-example.js';

// `ctxbus capabilities init` as the real command: the file it writes passes check and routes
// code from OpenClaw to Claude Code; an existing file is kept unless --force; and the example is
// this repository's capabilities.yaml (one text, two places).

const dir = tempDir('ctxbus-capabilities-init-');
afterAll(() => removeDir(dir));

describe('ctxbus capabilities init', () => {
  it('is what a missing file points to, in one line (exit 2)', async () => {
    const missing = join(dir, 'nofile.yaml');
    const checked = await runCli(['capabilities', 'check', missing]);
    expect(checked.code).toBe(2);
    expect(checked.stderr).toBe(
      `ctxbus: error: no capabilities file at ${missing}: write one with \`ctxbus capabilities init\`, or give the path of yours\n`,
    );
  });

  it('writes a file that checks, routes and is kept unless --force', async () => {
    const file = join(dir, 'capabilities.yaml');
    const written = await runCli(['capabilities', 'init', file]);
    expect(written.code, written.stderr).toBe(0);
    expect(written.stdout).toBe(`wrote ${file}; next: ctxbus capabilities check ${file}\n`);
    expect(readFileSync(file, 'utf8')).toBe(CAPABILITIES_EXAMPLE);
    const checked = await runCli(['capabilities', 'check', file]);
    expect(checked.code, checked.stderr).toBe(0);
    expect(checked.stdout).toContain(`${file}: ok, 4 runtimes`);
    const routed = await runCli([
      'route',
      '--capabilities',
      file,
      '--explain',
      '{"requiredCapabilities":["code_execution"],"origin":"openclaw"}',
    ]);
    expect(routed.code, routed.stderr).toBe(0);
    expect(routed.stdout).toContain('claude-code');

    writeFileSync(file, 'version: 1\nruntimes: {}\n');
    const again = await runCli(['capabilities', 'init', file]);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toBe(
      `ctxbus: error: ${file} exists; kept as it is (--force replaces it, or give another path)\n`,
    );
    expect(readFileSync(file, 'utf8')).toBe('version: 1\nruntimes: {}\n');
    const forced = await runCli(['capabilities', 'init', '--force', file]);
    expect(forced.code, forced.stderr).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe(CAPABILITIES_EXAMPLE);
  });

  it("is this repository's capabilities.yaml, less its editor's schema line", () => {
    const repository = readFileSync(
      resolve(import.meta.dirname, '../../../../capabilities.yaml'),
      'utf8',
    );
    const [schemaLine, ...rest] = repository.split('\n');
    expect(schemaLine).toMatch(/^# yaml-language-server: \$schema=/);
    expect(CAPABILITIES_EXAMPLE).toBe(rest.join('\n'));
  });
});
