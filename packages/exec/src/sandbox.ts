import { execFile } from 'node:child_process';
import { accessSync, constants, realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, delimiter, dirname, isAbsolute, join, resolve } from 'node:path';
import { CtxbusError } from '@ctxbus/core/light';
import { DEFAULT_CHILD_PATH } from './scrub-env.js';
import { within } from './workdir.js';

// `sandboxed` mode: the command runs inside bubblewrap with the whole file system read-only,
// only the working directory writable, a private /tmp, its own /dev, /proc and PID namespace,
// no network unless the capability's limits allow it, the home directory hidden, and all
// capabilities dropped. Its private directories are tmpfs, in memory, each with a size: the
// kernel's OOM killer does not count tmpfs pages against the command that wrote them, so an
// unbounded /tmp could fill the machine's memory and push the hub or the database out instead
// (memory a command holds otherwise, memfd or SysV shared memory included, only a cgroup
// bounds). Where bwrap is missing or does not work, sandboxed runs are refused (fail closed):
// never run unsandboxed in their place.

export type SandboxStatus =
  | {
      available: true;
      bwrapPath: string;
      /**
       * Whether this bwrap can size a tmpfs (`--size`; an older bubblewrap has none): without
       * it the sandbox's private directories are bounded only by the machine's memory.
       */
      sizedTmpfs: boolean;
    }
  | { available: false; reason: string };

/** What a sandboxed command may store in its /tmp by default (512 MiB, in memory). */
export const SANDBOX_TMP_BYTES = 512 * 1024 * 1024;
/** What each other private directory (the hidden home, /run, /dev/shm, the hub's) may hold. */
const HIDDEN_TMPFS_BYTES = 64 * 1024 * 1024;

export interface SandboxDetectOptions {
  /** A bwrap binary to use instead of looking it up (tests name a missing one). */
  bwrapPath?: string;
  /** Where to look it up (default: this process's PATH). */
  searchPath?: string;
}

export interface SandboxLayout {
  bwrapPath: string;
  /** The working directory's real path: the one writable place. */
  workdir: string;
  /** Whether the command may reach the network (default false). */
  network?: boolean;
  /** Directories replaced by an empty tmpfs (default: the home directory). */
  hidePaths?: readonly string[];
  /**
   * The hub's files on this machine, hidden whatever hidePaths says: directories behind an
   * empty tmpfs, a file behind /dev/null (bound without devices, so it cannot be opened)
   * (default: `ctxbusPaths()`).
   */
  hubPaths?: readonly string[];
  /** Where the command's program is looked up (the child's PATH; default: this process's). */
  searchPath?: string;
  /**
   * The child's descriptor of the working directory, opened and checked before spawn: bwrap
   * binds that directory (through `/proc/self/fd/N`, which the kernel resolves to the open
   * directory, not by name), not whatever the path names by then: a directory swapped for a
   * symlink or another directory after the last check would otherwise be bound in its place.
   * (bwrap's own `--bind-fd` binds the path the descriptor reads as, by name again.)
   */
  workdirFd?: number;
  /** Bind the working directory read-only (default false: it is the one writable place). */
  readOnlyWorkdir?: boolean;
  /**
   * What the command may store in its /tmp (default SANDBOX_TMP_BYTES); each other tmpfs (the
   * hidden home, /run, /dev/shm, the hub's directories) holds at most 64 MiB, or this when
   * smaller. A write past it fails with ENOSPC.
   */
  tmpBytes?: number;
  /** Whether bwrap can size a tmpfs (the status's `sizedTmpfs`; default true). */
  sizedTmpfs?: boolean;
}

/**
 * The installation the command's program lives in (its real path's directory, or the prefix
 * above a `bin/`), kept visible read-only: a toolchain under /tmp, /run or a hidden home (a
 * fresh clone's Node, nvm) would otherwise vanish behind the tmpfs mounts. Never a directory
 * that holds more than one installation: a prefix that is a hidden directory or sits right
 * under one (`~/.local` for `~/.local/bin/x`, `~/.cargo`, the home itself) would expose data
 * directories and credentials (`~/.local/share/ctxbus` and its signing key, `~/.cargo`'s
 * token), so then only the program's own directory is bound.
 */
function programPrefix(
  program: string,
  searchPath: string,
  hidden: readonly string[],
): string | null {
  const found = isAbsolute(program) ? program : findExecutable(program, searchPath);
  if (found === null) return null;
  let directory: string;
  try {
    directory = dirname(realpathSync.native(found));
  } catch {
    return null;
  }
  const prefix = basename(directory) === 'bin' ? dirname(directory) : directory;
  const tooWide = (path: string) =>
    hidden.some((root) => path === root || dirname(path) === root || root.startsWith(`${path}/`));
  if (!tooWide(prefix)) return prefix;
  return tooWide(directory) && directory !== prefix ? null : directory;
}

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The first executable `name` on `searchPath`, or null. */
export function findExecutable(name: string, searchPath = process.env.PATH ?? ''): string | null {
  for (const directory of searchPath.split(delimiter)) {
    if (!directory || !isAbsolute(directory)) continue;
    const candidate = join(directory, name);
    if (isExecutableFile(candidate)) return candidate;
  }
  return null;
}

/**
 * Where ctxbus keeps its secrets and data on this machine, by the variables and defaults the
 * CLI uses: the config directory (credentials, the approval key's directory `keys/`), the data
 * directory (the embedded store's database), and $CTXBUS_APPROVAL_KEY. The sandbox hides them
 * even when they lie outside the home directory. A hub started with other paths (`--data`
 * elsewhere) is not known here: add them to `sandbox.hidePaths`.
 */
export function ctxbusPaths(env: NodeJS.ProcessEnv = process.env, home = homedir()): string[] {
  const config = env.CTXBUS_CONFIG_DIR
    ? resolve(env.CTXBUS_CONFIG_DIR)
    : join(env.XDG_CONFIG_HOME || join(home, '.config'), 'ctxbus');
  const data = env.CTXBUS_DATA
    ? resolve(env.CTXBUS_DATA)
    : join(env.XDG_DATA_HOME || join(home, '.local', 'share'), 'ctxbus');
  return [config, data, ...(env.CTXBUS_APPROVAL_KEY ? [resolve(env.CTXBUS_APPROVAL_KEY)] : [])];
}

function exists(path: string): 'directory' | 'file' | null {
  try {
    return statSync(path).isDirectory() ? 'directory' : 'file';
  } catch {
    return null;
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

const NAMESPACES = [
  '--unshare-pid',
  '--unshare-ipc',
  '--unshare-uts',
  '--die-with-parent',
  '--new-session',
  '--cap-drop',
  'ALL',
];

/** The hidden paths (default: the home) and the hub's files, parents first. */
function hiddenPaths(layout: Omit<SandboxLayout, 'workdir'>): string[] {
  return [...(layout.hidePaths ?? [homedir()]), ...(layout.hubPaths ?? ctxbusPaths())]
    .filter((path) => path !== '/' && isAbsolute(path))
    .sort((a, b) => a.length - b.length);
}

/** What the sandbox hides: the hidden paths, the hub's files, /tmp, /run. */
function hiddenRoots(layout: Omit<SandboxLayout, 'workdir'>): string[] {
  return [...hiddenPaths(layout), '/tmp', '/run'];
}

/** The real path of `path` when it exists (the working directory is one), else as given. */
function realPathOf(path: string): string {
  try {
    return realpathSync.native(path);
  } catch {
    return path;
  }
}

/**
 * The hub's file (config directory, data directory, approval key) that holds `dir`, if any: a
 * sandboxed command's working directory may not be there, since its bind would make those
 * files the one writable place.
 */
export function hubPathHolding(
  dir: string,
  hubPaths: readonly string[] = ctxbusPaths(),
): string | null {
  const real = realPathOf(dir);
  return (
    hubPaths.find((path) => {
      return within(realPathOf(path), real);
    }) ?? null
  );
}

/**
 * Hides again each hidden path inside one of `binds` (the working directory, the program's
 * installation): a bind made after the hiding uncovers what lies below it, so a working
 * directory that holds the config directory (a command run in the home) would show the tokens
 * and the signing key, writable.
 */
function hiddenAgain(layout: Omit<SandboxLayout, 'workdir'>, binds: readonly string[]): string[] {
  return hiddenPaths(layout)
    .map(realPathOf)
    .filter((real) => binds.some((bind) => bind !== real && within(bind, real)))
    .flatMap((path) => hide(layout, path));
}

type TmpfsLayout = Pick<SandboxLayout, 'tmpBytes' | 'sizedTmpfs'>;

/** A tmpfs at `path` holding at most `bytes` (where bwrap can size one). */
function tmpfs(layout: TmpfsLayout, path: string, bytes: number): string[] {
  return layout.sizedTmpfs === false
    ? ['--tmpfs', path]
    : ['--size', String(bytes), '--tmpfs', path];
}

/** What a private directory other than /tmp may hold. */
function hiddenBytes(layout: TmpfsLayout): number {
  return Math.min(HIDDEN_TMPFS_BYTES, layout.tmpBytes ?? SANDBOX_TMP_BYTES);
}

/** The bwrap arguments that hide `path`: a directory behind a tmpfs, a file behind /dev/null. */
function hide(layout: TmpfsLayout, path: string): string[] {
  const kind = exists(path);
  if (kind === 'directory') return tmpfs(layout, path, hiddenBytes(layout));
  if (kind === 'file') return ['--ro-bind', '/dev/null', path];
  return [];
}

function isolation(layout: Omit<SandboxLayout, 'workdir'>): string[] {
  // bwrap's own /dev is an unsized tmpfs, /dev/shm a directory in it: /dev/shm is a sized
  // tmpfs of its own (as Docker's 64 MiB), and the rest of /dev read-only (its device nodes are
  // binds, writable as ever).
  const args = ['--ro-bind', '/', '/', '--dev', '/dev'];
  args.push(...tmpfs(layout, '/dev/shm', hiddenBytes(layout)), '--remount-ro', '/dev');
  args.push('--proc', '/proc');
  // The new /proc's sys/ is the kernel's own settings, writable by uid 0 whatever its
  // capabilities: a root worker's command could set kernel.core_pattern to a program of its
  // own, which the kernel then runs as root outside every namespace at the next crash.
  args.push('--ro-bind', '/proc/sys', '/proc/sys');
  args.push(...tmpfs(layout, '/tmp', layout.tmpBytes ?? SANDBOX_TMP_BYTES));
  if (!layout.network) {
    // A new network namespace has only its own loopback; Unix sockets under /run (a database's,
    // a container engine's) are hidden too, since a read-only bind still lets them be dialled.
    args.push('--unshare-net');
    if (isDirectory('/run')) args.push(...tmpfs(layout, '/run', hiddenBytes(layout)));
  }
  for (const hidden of hiddenPaths(layout)) args.push(...hide(layout, hidden));
  return args;
}

/** bwrap and its arguments for a layout, then `--` and the command's argv. */
export function sandboxArgv(layout: SandboxLayout, argv: readonly string[]): string[] {
  const prefix = programPrefix(
    argv[0] as string,
    layout.searchPath ?? process.env.PATH ?? '',
    hiddenRoots(layout),
  );
  const shown = prefix !== null && prefix !== '/' ? [prefix] : [];
  return [
    layout.bwrapPath,
    ...isolation(layout),
    ...shown.flatMap((dir) => ['--ro-bind', dir, dir]),
    layout.readOnlyWorkdir === true ? '--ro-bind' : '--bind',
    // The descriptor's magic link: the kernel resolves it to the open directory itself.
    layout.workdirFd === undefined ? layout.workdir : `/proc/self/fd/${layout.workdirFd}`,
    layout.workdir,
    ...hiddenAgain(layout, [...shown, layout.workdir]),
    '--chdir',
    layout.workdir,
    ...NAMESPACES,
    '--',
    ...withoutDescriptor(layout.workdirFd, argv),
  ];
}

/**
 * The command, started so that it does not inherit descriptor `fd`: bwrap passes every
 * descriptor it was given on to the command, and the working directory's is the host's own,
 * writable whatever the sandbox binds (`fchdir` to it, then `..`, reaches the whole file system
 * and the sockets under /run). A shell closes it and becomes the command (`exec`).
 */
function withoutDescriptor(fd: number | undefined, argv: readonly string[]): readonly string[] {
  if (fd === undefined) return argv;
  if (!Number.isInteger(fd) || fd < 3 || fd > 9)
    throw new CtxbusError('internal', `the working directory's descriptor must be 3-9, not ${fd}`);
  // A leading dash would be read as an option of exec (bash's), not as the program.
  if ((argv[0] ?? '').startsWith('-'))
    throw new CtxbusError('validation_failed', `a program name cannot start with "-": ${argv[0]}`);
  return ['/bin/sh', '-c', `exec ${fd}<&-; exec "$@"`, 'sh', ...argv];
}

const PID_NAMESPACE = [
  '--dev-bind',
  '/',
  '/',
  '--proc',
  '/proc',
  '--unshare-pid',
  '--die-with-parent',
  // A root worker's command could otherwise unmount this /proc and see the host's below it
  // (every process, the worker's environment with its token): no mounts, no unmounts.
  '--cap-drop',
  'CAP_SYS_ADMIN',
];

/**
 * bwrap and its arguments for an UNSANDBOXED command that must not outlive its worker: the
 * whole file system as it is (`--dev-bind / /`, writable where the user may write), only a PID
 * namespace of its own (with its own /proc) and `--die-with-parent`. When the worker dies, even
 * by kill -9, the namespace's init dies with it and the kernel kills everything inside,
 * processes that started their own session included; the runner ends them the same way at a
 * timeout or cancel. No other isolation: this is not the sandbox.
 */
export function pidNamespaceArgv(
  bwrapPath: string,
  cwd: string,
  argv: readonly string[],
): string[] {
  return [bwrapPath, ...PID_NAMESPACE, '--chdir', cwd, '--', ...argv];
}

const cache = new Map<string, Promise<SandboxStatus>>();

/** Runs bwrap with `args`: null when it worked, else its first line of complaint. */
function runBwrap(bwrapPath: string, args: readonly string[]): Promise<string | null> {
  return new Promise((resolve) => {
    execFile(
      bwrapPath,
      args,
      { env: { PATH: DEFAULT_CHILD_PATH }, timeout: 10_000 },
      (error, _stdout, stderr) =>
        resolve(error ? (stderr || error.message).trim().split('\n')[0] || 'failed' : null),
    );
  });
}

/** Whether this bwrap knows `--size` (its --help lists it). */
function sizesTmpfs(bwrapPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(
      bwrapPath,
      ['--help'],
      { env: { PATH: DEFAULT_CHILD_PATH }, timeout: 10_000 },
      (_e, out) => resolve(/^\s*--size\b/m.test(String(out))),
    );
  });
}

/**
 * A run of `true` with the isolation a command gets (all but the writable bind), or with
 * `isolationArgs` (the PID namespace's).
 */
async function trial(bwrapPath: string, isolationArgs?: readonly string[]): Promise<SandboxStatus> {
  const sizedTmpfs = isolationArgs === undefined && (await sizesTmpfs(bwrapPath));
  const args = isolationArgs ?? [...isolation({ bwrapPath, sizedTmpfs }), ...NAMESPACES];
  const failed = await runBwrap(bwrapPath, [...args, '--', 'true']);
  if (failed === null) return { available: true, bwrapPath, sizedTmpfs };
  return { available: false, reason: `bwrap at ${bwrapPath} does not work: ${failed}` };
}

/**
 * Whether sandboxed runs are possible here: bwrap exists AND a trial run with the sandbox's
 * isolation works. Cached per binary and search path (the first answer stands).
 */
export function detectSandbox(options: SandboxDetectOptions = {}): Promise<SandboxStatus> {
  return detect(options, 'sandbox');
}

/**
 * Whether an unsandboxed command can be tied to its worker here (`pidNamespaceArgv`): bwrap
 * exists AND a trial run with a PID namespace works (it needs unprivileged user namespaces, or
 * root). When it cannot, an unsandboxed command runs in its own process group only: a process
 * that starts its own session escapes the timeout, and a worker killed with SIGKILL leaves its
 * command running. The worker says so when it starts. Cached like `detectSandbox`.
 */
export async function detectPidNamespace(
  options: SandboxDetectOptions = {},
): Promise<SandboxStatus> {
  const status = await detect(options, 'pid');
  if (status.available) return status;
  return {
    available: false,
    reason: `${status.reason.replace(/, so sandboxed commands are refused.*$/, '')}; unsandboxed commands run in a process group only, so one that starts its own session can outlive its timeout, and any can outlive a worker killed with SIGKILL`,
  };
}

function detect(options: SandboxDetectOptions, kind: 'sandbox' | 'pid'): Promise<SandboxStatus> {
  const key = `${kind}\0${options.bwrapPath ?? ''}\0${options.searchPath ?? process.env.PATH ?? ''}`;
  const known = cache.get(key);
  if (known) return known;
  const bwrapPath = options.bwrapPath ?? findExecutable('bwrap', options.searchPath);
  const status: Promise<SandboxStatus> =
    bwrapPath === null
      ? Promise.resolve({
          available: false,
          reason:
            'bubblewrap (bwrap) is not installed, so sandboxed commands are refused (install the bubblewrap package)',
        })
      : !isExecutableFile(bwrapPath)
        ? Promise.resolve({
            available: false,
            reason: `bwrap at ${bwrapPath} is missing or not executable, so sandboxed commands are refused`,
          })
        : trial(bwrapPath, kind === 'pid' ? PID_NAMESPACE : undefined);
  cache.set(key, status);
  return status;
}
