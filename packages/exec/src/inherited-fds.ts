import { closeSync, readdirSync, readFileSync } from 'node:fs';

/** O_CLOEXEC in /proc/self/fdinfo's octal flags. */
const CLOSE_ON_EXEC = 0o2000000;

/**
 * Closes the descriptors this process inherited open (not close-on-exec) beyond stdin, stdout
 * and stderr, and returns their numbers. Node opens its own close-on-exec; one it inherited
 * (a shell's, a service manager's) would pass on to every command spawned from here, into the
 * sandbox too. Linux only: elsewhere nothing is read and nothing closed.
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
    if (flags === null || (flags & CLOSE_ON_EXEC) !== 0) continue;
    try {
      closeSync(fd);
      closed.push(fd);
    } catch {
      // Gone meanwhile (the directory listing's own descriptor).
    }
  }
  return closed;
}

function readFlags(fd: number): number | null {
  try {
    const match = /^flags:\s*([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'));
    return match ? Number.parseInt(match[1] as string, 8) : null;
  } catch {
    return null;
  }
}
