import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { HubProcess } from '@ctxbus/test-kit';
import { removeDir, spawnCli, startHubProcess, tempDir } from '@ctxbus/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The README's "Use it" block, run as written against a real hub: every command in it must
// work for a reader who types it in. Only the long-running `ctxbus watch` is left to run on its
// own below (its first event is awaited, then it is stopped as a reader would, with Ctrl-C).

const README = resolve(fileURLToPath(import.meta.url), '../../../../README.md');

/** The first ```sh block after `heading`, its continuation lines joined. */
function shellBlock(markdown: string, heading: string): string[] {
  const start = markdown.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`README has no "${heading}" section`);
  const block = /```sh\n([\s\S]*?)```/.exec(markdown.slice(start));
  if (!block?.[1]) throw new Error(`"${heading}" has no sh block`);
  return block[1]
    .replace(/\\\n\s*/g, '')
    .split('\n')
    .filter((line) => line.trim() !== '');
}

/** Splits a command line as a POSIX shell would for these simple lines (quotes, comments). */
function words(line: string): string[] {
  const out: string[] = [];
  const pattern = /"((?:[^"\\]|\\.)*)"|'([^']*)'|(#.*$)|(\S+)/g;
  for (const match of line.matchAll(pattern)) {
    if (match[3] !== undefined) break;
    out.push(match[1]?.replace(/\\(.)/g, '$1') ?? match[2] ?? match[4] ?? '');
  }
  return out;
}

let hub: HubProcess;
const configDir = tempDir('ctxbus-readme-config-');

beforeAll(async () => {
  // The reader's `ctxbus serve` in another terminal, saving its admin token for their CLI.
  hub = await startHubProcess({ env: { CTXBUS_CONFIG_DIR: configDir } });
});

afterAll(async () => {
  expect(await hub.stop()).toBe(0);
  removeDir(configDir);
});

describe('README "Use it"', () => {
  it('runs every command as written', async () => {
    const lines = shellBlock(readFileSync(README, 'utf8'), '## Use it');
    const env = { CTXBUS_CONFIG_DIR: configDir, HOME: tempDir('ctxbus-readme-home-') };
    const outputs = new Map<string, string>();
    let watch: ReturnType<typeof spawnCli> | null = null;
    for (const line of lines) {
      const [command, ...args] = words(line);
      expect(command, line).toBe('ctxbus');
      if (args[0] === 'watch') {
        watch = spawnCli(args, { env });
        continue;
      }
      const result = await spawnCli(args, { env }).done;
      expect({ line, code: result.code, stderr: result.stderr }).toMatchObject({ code: 0 });
      outputs.set(args[0] ?? '', `${outputs.get(args[0] ?? '') ?? ''}${result.stdout}`);
    }
    expect(outputs.get('read')).toContain('Use SQLite for the embedded store');
    expect(outputs.get('search')).toContain('Use SQLite for the embedded store');
    expect(outputs.get('shared')).toContain('CI is red on main');

    // watch tails live changes: a blocking alert written now reaches it; Ctrl-C ends it.
    expect(watch).not.toBeNull();
    const tail = watch as ReturnType<typeof spawnCli>;
    let seen = '';
    const arrived = new Promise<void>((resolvePromise) => {
      tail.child.stdout?.on('data', (chunk: Buffer) => {
        seen += chunk.toString();
        if (seen.includes('Deploy is blocked')) resolvePromise();
      });
    });
    const ready = new Promise<void>((resolvePromise) => {
      let err = '';
      tail.child.stderr?.on('data', (chunk: Buffer) => {
        err += chunk.toString();
        if (err.includes('watching')) resolvePromise();
      });
    });
    await ready;
    const alert = await spawnCli(
      ['write', '--type', 'alert', '--title', 'Deploy is blocked', '--urgency', 'blocking'],
      { env },
    ).done;
    expect(alert.code).toBe(0);
    await arrived;
    tail.child.kill('SIGINT');
    expect((await tail.done).code).toBe(0);
    expect(seen).toMatch(/added: #\d+ alert \[blocking\] Deploy is blocked/);
  });
});
