import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { NODE } from './test-support.js';

const MODULE = fileURLToPath(new URL('./inherited-fds.ts', import.meta.url));

// A child Node that inherited descriptor 50 open (as from a shell), closes what it inherited,
// and lists what a command it spawns holds, before and after.
const SCRIPT = `
const { closeInheritedDescriptors } = await import(${JSON.stringify(MODULE)});
const { execFileSync } = await import('node:child_process');
const list = () => execFileSync('sh', ['-c', 'ls /proc/$$/fd']).toString().split('\\n').filter(Boolean);
const before = list();
const closed = closeInheritedDescriptors();
const { readdirSync, readlinkSync } = await import('node:fs');
const perfMaps = readdirSync('/proc/self/fd').filter((fd) => {
  try { return readlinkSync('/proc/self/fd/' + fd).endsWith('/perf-' + process.pid + '.map'); }
  catch { return false; }
});
console.log(JSON.stringify({ before, closed, after: list(), perfMaps }));
`;

/** The child's report, run by bash with descriptor 50 open as a shell passes it on. */
function runChild(nodeFlags: readonly string[]): Promise<Record<string, string[]>> {
  return new Promise((resolve, reject) => {
    // Descriptor 50 as a shell passes it on: open, not close-on-exec (Node marks low ones
    // close-on-exec as it starts; not those above 20 or so, such as a shell's 251).
    execFile(
      'bash',
      ['-c', 'exec "$0" "$@" --input-type=module -e "$SCRIPT" 50</dev/null', NODE, ...nodeFlags],
      { env: { ...process.env, SCRIPT } },
      (error, stdout) => (error ? reject(error) : resolve(JSON.parse(stdout))),
    );
  });
}

const linux = process.platform === 'linux';
const because = linux ? '' : ` (skipped: ${process.platform} has no /proc/self/fdinfo)`;

describe.skipIf(!linux)(`closeInheritedDescriptors${because}`, () => {
  it('closes what the process inherited open, so no command it spawns gets it', async () => {
    const { before, closed, after } = await runChild([]);
    expect(before).toContain('50');
    expect(closed).toContain(50);
    expect(after).not.toContain('50');
    expect(after).toEqual(expect.arrayContaining(['0', '1', '2']));
  });

  it("keeps the files the runtime opened for itself (V8's perf map), which it writes on into", async () => {
    const { closed, perfMaps } = await runChild(['--perf-basic-prof']);
    expect(closed).toContain(50);
    expect(perfMaps).toHaveLength(1);
  });
});
