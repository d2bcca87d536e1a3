// What the worker's command guard costs the machine, measured beside the task runs: `true`
// spawned from Node as the peers' handlers spawn it, and `true` through the PID namespace the
// ctxbus worker puts every unsandboxed command in (bwrap; see @ctxbus/exec's sandbox.ts), so
// that no command outlives its task or its worker. Counted twice, in alternating blocks: as
// this process's CPU and its children's (others' load does not enter, but work the kernel does
// for no process, such as tearing a namespace down, is left out) and as the whole machine's busy
// CPU (all of it, others' load too).
import { spawn } from 'node:child_process';
import { detectPidNamespace, pidNamespaceArgv } from '@ctxbus/exec';
import { machineBusyMs, processCpu } from './proc-cpu.ts';

/** CPU per spawned `true`, in ms. */
export interface GuardCost {
  /** The spawning process and its children. */
  plainMs: number;
  guardedMs: number;
  /** The whole machine. */
  plainMachineMs: number;
  guardedMachineMs: number;
}

function run(argv: readonly string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const [command = 'true', ...args] = argv;
    const child = spawn(command, args, { stdio: 'ignore' });
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${argv.join(' ')} exited with ${code}`)),
    );
  });
}

/** Null when this machine has no usable bwrap (the worker then runs commands unguarded). */
export async function measureCommandGuard(spawns: number): Promise<GuardCost | null> {
  const status = await detectPidNamespace();
  if (!status.available || processCpu(process.pid) === null || machineBusyMs() === null)
    return null;
  const cpu = () => {
    const now = processCpu(process.pid);
    return now === null ? 0 : now.self + now.children;
  };
  const guarded = pidNamespaceArgv(status.bwrapPath, process.cwd(), ['true']);
  const plain = ['true'];
  const block = 10;
  const total = { plain: 0, guarded: 0 };
  const machine = { plain: 0, guarded: 0 };
  for (let done = 0; done < spawns; done += block) {
    for (const [kind, argv] of [
      ['plain', plain],
      ['guarded', guarded],
    ] as const) {
      const before = cpu();
      const machineBefore = machineBusyMs() ?? 0;
      for (let index = 0; index < block; index++) await run(argv);
      total[kind] += cpu() - before;
      machine[kind] += (machineBusyMs() ?? machineBefore) - machineBefore;
    }
  }
  const count = Math.ceil(spawns / block) * block;
  return {
    plainMs: total.plain / count,
    guardedMs: total.guarded / count,
    plainMachineMs: machine.plain / count,
    guardedMachineMs: machine.guarded / count,
  };
}
