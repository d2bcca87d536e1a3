// CPU time of processes from /proc (Linux): a process's own (utime + stime) and its waited-for
// children's (cutime + cstime), in ms.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let ticksPerSecond: number | undefined;

function msPerTick(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return 1000 / ticksPerSecond;
}

export interface ProcessCpu {
  /** utime + stime, ms. */
  self: number;
  /** cutime + cstime: the children it has waited for, ms. */
  children: number;
}

/** The CPU of `pid` so far, or null when it has gone. */
export function processCpu(pid: number): ProcessCpu | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // Fields after the command name (which may hold spaces), from field 3 (state) on.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const tick = msPerTick();
  const field = (index: number) => Number(fields[index - 3]) * tick;
  return { self: field(14) + field(15), children: field(16) + field(17) };
}

/** CPU used by `pids` since `before` (each pid's reading then). */
export function cpuSince(
  before: ReadonlyMap<number, ProcessCpu>,
  pids: readonly number[],
): ProcessCpu {
  const total = { self: 0, children: 0 };
  for (const pid of pids) {
    const start = before.get(pid) ?? { self: 0, children: 0 };
    const end = processCpu(pid) ?? start;
    total.self += end.self - start.self;
    total.children += end.children - start.children;
  }
  return total;
}

export function readAll(pids: readonly number[]): Map<number, ProcessCpu> {
  const readings = new Map<number, ProcessCpu>();
  for (const pid of pids) {
    const cpu = processCpu(pid);
    if (cpu) readings.set(pid, cpu);
  }
  return readings;
}

/**
 * The whole machine's busy CPU so far (every process and the kernel's own threads and
 * interrupts: /proc/stat less idle and iowait), in ms over all cores; null off Linux.
 */
export function machineBusyMs(): number | null {
  let line: string | undefined;
  try {
    line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0];
  } catch {
    return null;
  }
  const [, ...ticks] = (line ?? '').trim().split(/\s+/).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is inside user already).
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = ticks;
  return (user + nice + system + irq + softirq + steal) * msPerTick();
}
