import { closeSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { basename } from 'node:path';

/** O_CLOEXEC in /proc/self/fdinfo's octal flags. */
const CLOSE_ON_EXEC = 0o2000000;

/**
 * Closes the descriptors this process inherited open (not close-on-exec) beyond stdin, stdout
 * and stderr, and returns their numbers. Node opens its own close-on-exec; one it inherited
 * (a shell's, a service manager's) would pass on to every command spawned from here, into the
 * sandbox too. Linux only: elsewhere nothing is read and nothing closed.
 *
 * Kept: a file named with this process's id, which the runtime opened for itself before any
 * code ran (V8's `perf-<pid>.map` under --perf-basic-prof, its `--prof` log): V8 writes on
 * into its descriptor, so closing it sent those lines into whatever took the number next (a
 * socket to the hub: "Parse Error: Invalid method").
 */
export function closeInheritedDescriptors(): number[] {
  let names: string[];
  try {
    names = readdirSync('/proc/self/fd');
  } catch {
    return [];
  }
  const channel = (process.channel as { fd?: number } | undefined)?.fd;
  const closed: number[] = [];
  for (const name of names) {
    const fd = Number(name);
    if (!Number.isInteger(fd) || fd <= 2 || fd === channel) continue;
    const flags = readFlags(fd);
    if (flags === null || (flags & CLOSE_ON_EXEC) !== 0 || isOwnFile(fd)) continue;
    try {
      closeSync(fd);
      closed.push(fd);
    } catch {
      // Gone meanwhile (the directory listing's own descriptor).
    }
  }
  return closed;
}

/** Whether `fd` is a file whose name holds this process's id as a number of its own. */
function isOwnFile(fd: number): boolean {
  try {
    const name = basename(readlinkSync(`/proc/self/fd/${fd}`));
    return new RegExp(`(^|\\D)${process.pid}(\\D|$)`).test(name);
  } catch {
    return false;
  }
}

function readFlags(fd: number): number | null {
  try {
    const match = /^flags:\s*([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'));
    return match ? Number.parseInt(match[1] as string, 8) : null;
  } catch {
    return null;
  }
}
