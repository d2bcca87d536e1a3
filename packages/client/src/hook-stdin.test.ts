import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readHookStdin } from './hook-stdin.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('readHookStdin', () => {
  it('reads a whole input larger than a pipe holds, as a hook process gets it', () => {
    const module = JSON.stringify(new URL('./hook-stdin.ts', import.meta.url).href);
    const input = JSON.stringify({ last_assistant_message: 'é決'.repeat(100_000) });
    // The child reads its own fd 0 (a pipe from spawnSync) and says what it got.
    const child = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const { readHookStdin } = await import(${module}); const text = await readHookStdin(); process.stdout.write(String(Buffer.byteLength(text)) + ' ' + text.slice(-12));`,
      ],
      { input, encoding: 'utf8' },
    );
    expect(child.stderr).toBe('');
    expect(child.stdout).toBe(`${Buffer.byteLength(input)} ${input.slice(-12)}`);
  });

  it('goes on with the stream after a non-blocking fd runs dry, keeping what it read', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ctxbus-stdin-'));
    dirs.push(dir);
    const fifo = join(dir, 'stdin');
    execFileSync('mkfifo', [fifo]);
    const fd = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const writer = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
    writeSync(writer, '{"hook_event_name":');
    const text = await readHookStdin(fd, () => {
      // Called once the fd said EAGAIN: the rest arrives on the stream, then the end.
      writeSync(writer, '"Stop"}');
      closeSync(writer);
      return new Socket({ fd, readable: true, writable: false });
    });
    expect(JSON.parse(text)).toEqual({ hook_event_name: 'Stop' });
  });
});
