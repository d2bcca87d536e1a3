import type { KeyObject } from 'node:crypto';
import { closeSync, constants, openSync, readlinkSync } from 'node:fs';
import { CtxbusError } from '@ctxbus/core/light';
import { z } from 'zod';
import { commandDigest, scriptHashFor, verifyApproval } from './approval.js';
import { checkCommand, parseAllowList } from './command-policy.js';
import type { OutputStream, RunCommandResult } from './run-command.js';
import { runCommand } from './run-command.js';
import type { SandboxDetectOptions } from './sandbox.js';
import {
  detectPidNamespace,
  detectSandbox,
  hubPathHolding,
  pidNamespaceArgv,
  sandboxArgv,
} from './sandbox.js';
import { scrubEnv } from './scrub-env.js';
import { checkProgramInside, checkWorkdir } from './workdir.js';

// The worker's one entry point: a request goes through the command policy (1), the working
// directory (2), the environment (3), the sandbox (5) and the approval (6), in that order, and
// comes out as a plan ready to run or a refusal with a code for the task.

/** Codes a refusal carries (the integrator puts them on the task). */
export type RefusalCode =
  | 'invalid_request'
  | 'not_allowed'
  | 'inline_eval'
  | 'workdir_escape'
  | 'sandbox_unavailable'
  | 'approval_required'
  | 'approval_invalid';

export const executionRequestSchema = z.strictObject({
  /** The task this command belongs to (approvals are bound to it). */
  taskId: z.string().min(1).max(200).optional(),
  argv: z.array(z.string().max(100_000)).min(1).max(10_000),
  cwd: z.string().min(1).max(4_096),
  sandboxed: z.boolean().default(false),
  network: z.boolean().default(false),
  /** Variables the request asks for: allowed names only (see scrubEnv). */
  env: z.record(z.string(), z.string().max(100_000)).optional(),
});

export type ExecutionRequest = z.input<typeof executionRequestSchema>;

export interface ExecutionPolicy {
  /** remote_execution.allow from capabilities.yaml. */
  allow: readonly string[];
  /** Directories commands may run in (remote_execution.workdir and the like; `~` expands). */
  roots: readonly string[];
  /** Whether the origin's trust level permits execution without a human's approval. */
  trustedOrigin: boolean;
  /** Environment names allowed beyond the base list. */
  envAllow?: readonly string[];
  /** Where allowed variables' values come from (default: process.env). */
  sourceEnv?: Readonly<Record<string, string | undefined>>;
  /** The PATH children get (default DEFAULT_CHILD_PATH). */
  childPath?: string;
  /** Whether sandboxed commands may reach the network (the capability's limits.network). */
  network?: boolean;
  /** Run every command sandboxed, whatever the request says (a `sandboxed` capability). */
  requireSandbox?: boolean;
  /**
   * Run unsandboxed commands in a PID namespace of their own tied to the worker (bwrap
   * `--unshare-pid --die-with-parent`, no other isolation) when bwrap can, so that nothing a
   * command starts outlives its timeout, its cancel or its worker (default true; false: a
   * process group only).
   */
  pidNamespace?: boolean;
  /**
   * How to find bwrap, what to hide inside the sandbox (default: the home directory) and what
   * a sandboxed command may store in its /tmp (default SANDBOX_TMP_BYTES).
   */
  sandbox?: SandboxDetectOptions & { hidePaths?: readonly string[]; tmpBytes?: number };
  /** The hub's Ed25519 public key for approvals (none: every approval is invalid). */
  approvalPublicKey?: KeyObject | string;
  /** The home directory `~` expands to (default: os.homedir()). */
  home?: string;
  /** The longest a command may run (the capability's limits.seconds): caps timeoutMs. */
  maxSeconds?: number;
}

/** What a human must approve for a refused command: the exact command and its digest. */
export interface ApprovalRequest {
  taskId: string | null;
  argv: string[];
  /** The working directory's real path (what the digest binds). */
  cwd: string;
  scriptHash: string | null;
  digest: string;
  /**
   * Why approval is needed: the policy's refusal, the origin's trust, or an entry that lets
   * the program run code from its free arguments, run outside the sandbox (`runs_code`).
   */
  because: 'not_allowed' | 'untrusted_origin' | 'runs_code';
}

export interface ExecutionPlan {
  taskId: string | null;
  argv: string[];
  /** As requested (re-checked at spawn). */
  cwd: string;
  /** Its real path when validated: spawn refuses if it changed. */
  realCwd: string;
  roots: string[];
  home: string | undefined;
  env: Record<string, string>;
  /** Variables the request asked for that were not passed, with why. */
  droppedEnv: { name: string; reason: string }[];
  sandbox: {
    bwrapPath: string;
    network: boolean;
    hidePaths?: readonly string[];
    /** What its /tmp may hold (none: the default), and whether bwrap can size it. */
    tmpBytes?: number;
    sizedTmpfs: boolean;
    /**
     * Whether the working directory is writable in it: not for a command only a code-running
     * entry allows (nobody approved it), since what it could leave there is what unsandboxed
     * commands read later (a .git/config fsmonitor for `git status`, a package.json script for
     * `npm test`, an edited script between an approval's hash and its run).
     */
    writable: boolean;
  } | null;
  /**
   * An unsandboxed command's PID namespace (null: sandboxed, which has its own, or not
   * possible here, or turned off by the policy: then a process group only).
   */
  pidNamespace: { bwrapPath: string } | null;
  /** Who approved it, when it ran on an approval. */
  approvedBy: string | null;
  /** The policy's cap on the hard timeout (null: none). */
  maxTimeoutMs: number | null;
}

export type Refusal = {
  ok: false;
  code: RefusalCode;
  reason: string;
  approvalRequest?: ApprovalRequest;
};

export type Preparation = { ok: true; plan: ExecutionPlan } | Refusal;

export interface PrepareExecutionInput {
  request: ExecutionRequest;
  policy: ExecutionPolicy;
  /** A hub-signed approval token for this task's exact command. */
  approval?: string;
  /** Epoch milliseconds, for approval expiry (default Date.now()). */
  now?: number;
}

function refuse(code: RefusalCode, reason: string): Refusal {
  return { ok: false, code, reason };
}

/** Applies the checks in order (see the module comment) and returns a plan or a refusal. */
export async function prepareExecution(input: PrepareExecutionInput): Promise<Preparation> {
  const parsed = executionRequestSchema.safeParse(input.request);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.length ? `${issue.path.join('.')}: ` : '';
    return refuse('invalid_request', `invalid request: ${field}${issue?.message ?? 'invalid'}`);
  }
  const request = parsed.data;
  const { policy } = input;

  // 1. The command: allow-list, inline evaluation, a program path that leaves the directory.
  let allow: ReturnType<typeof parseAllowList>;
  try {
    allow = parseAllowList(policy.allow);
  } catch (cause) {
    if (CtxbusError.isInstance(cause)) return refuse('not_allowed', cause.message);
    throw cause;
  }
  const command = checkCommand(request.argv, allow, { cwd: request.cwd });
  let needsApproval: ApprovalRequest['because'] | null = null;
  if (!command.allowed) {
    if (command.code === 'not_allowed') needsApproval = 'not_allowed';
    else
      return refuse(
        command.code === 'invalid_argv' ? 'invalid_request' : command.code,
        command.reason,
      );
  }
  if (!policy.trustedOrigin) needsApproval ??= 'untrusted_origin';
  // An entry that is permission to run code (`python3 ...`, `make ...`) allows a command only
  // inside the sandbox; outside it, a human approves the exact command.
  const sandboxed = request.sandboxed || policy.requireSandbox === true;
  if (command.allowed && command.runsCode !== undefined && !sandboxed) {
    needsApproval ??= 'runs_code';
  }

  // 2. The working directory, by real path, and the program inside it.
  const workdir = checkWorkdir(request.cwd, policy.roots, { home: policy.home });
  if (!workdir.ok) return refuse(workdir.code, workdir.reason);
  const program = checkProgramInside(request.argv[0] as string, workdir.realPath);
  if (!program.ok) return refuse(program.code, program.reason);

  // 3. The environment.
  const { env, dropped } = scrubEnv({
    source: policy.sourceEnv ?? process.env,
    extraNames: policy.envAllow,
    requested: request.env,
    path: policy.childPath,
  });

  // 5. The sandbox: fail closed.
  let sandbox: ExecutionPlan['sandbox'] = null;
  if (sandboxed) {
    if (request.network && !policy.network) {
      return refuse('not_allowed', "network access is not allowed by the capability's limits");
    }
    const hub = hubPathHolding(workdir.realPath);
    if (hub !== null) {
      return refuse(
        'workdir_escape',
        `the working directory ${request.cwd} is inside the hub's files (${hub}): no sandboxed command runs there`,
      );
    }
    const status = await detectSandbox(policy.sandbox);
    if (!status.available) return refuse('sandbox_unavailable', status.reason);
    sandbox = {
      bwrapPath: status.bwrapPath,
      network: request.network && policy.network === true,
      ...(policy.sandbox?.hidePaths && { hidePaths: policy.sandbox.hidePaths }),
      ...(policy.sandbox?.tmpBytes !== undefined && { tmpBytes: policy.sandbox.tmpBytes }),
      sizedTmpfs: status.sizedTmpfs,
      writable: true,
    };
  }
  let pidNamespace: ExecutionPlan['pidNamespace'] = null;
  if (!sandboxed && policy.pidNamespace !== false) {
    const status = await detectPidNamespace(policy.sandbox);
    if (status.available) pidNamespace = { bwrapPath: status.bwrapPath };
  }

  // 6. The approval, when the allow-list or the origin's trust asks for one.
  let approvedBy: string | null = null;
  if (needsApproval) {
    let scriptHash: string | null;
    try {
      scriptHash = await scriptHashFor(request.argv, workdir.realPath);
    } catch (error) {
      // Nothing to bind an approval to: refused, never retried (the same files fail again).
      const why = (error as Error).message;
      return refuse('not_allowed', `cannot bind an approval to this command: ${why}`);
    }
    const identity = { argv: request.argv, cwd: workdir.realPath, scriptHash };
    const approvalRequest: ApprovalRequest = {
      taskId: request.taskId ?? null,
      ...identity,
      digest: commandDigest(identity),
      because: needsApproval,
    };
    const why =
      needsApproval === 'not_allowed'
        ? command.allowed
          ? ''
          : command.reason
        : needsApproval === 'runs_code'
          ? `${command.allowed ? command.runsCode : ''}, outside the sandbox`
          : "the origin's trust level does not permit execution";
    if (input.approval === undefined) {
      return {
        ...refuse('approval_required', `${why}: a human must approve this exact command`),
        approvalRequest,
      };
    }
    if (policy.approvalPublicKey === undefined) {
      return refuse('approval_invalid', 'this worker has no hub key to verify approvals with');
    }
    if (request.taskId === undefined) {
      return refuse('approval_invalid', 'an approval needs the task id it was given for');
    }
    const check = verifyApproval(
      policy.approvalPublicKey,
      input.approval,
      { taskId: request.taskId, ...identity },
      input.now,
    );
    if (!check.valid) return { ...refuse(check.code, check.reason), approvalRequest };
    approvedBy = check.approval.approvedBy;
  }
  // Code nobody approved, allowed only by an entry that is permission to run code: it may read
  // the directory, not change it (see ExecutionPlan.sandbox.writable).
  if (sandbox !== null && command.allowed && command.runsCode !== undefined && !approvedBy) {
    sandbox.writable = false;
  }

  return {
    ok: true,
    plan: {
      taskId: request.taskId ?? null,
      argv: request.argv,
      cwd: request.cwd,
      realCwd: workdir.realPath,
      roots: [...policy.roots],
      home: policy.home,
      env,
      droppedEnv: dropped,
      sandbox,
      pidNamespace,
      approvedBy,
      maxTimeoutMs: policy.maxSeconds === undefined ? null : policy.maxSeconds * 1000,
    },
  };
}

export interface ExecuteOptions {
  timeoutMs: number;
  inactivityMs: number;
  maxOutputBytes: number;
  signal?: AbortSignal;
  onOutput?: (stream: OutputStream, chunk: string) => void;
  maxProgressBytes?: number;
  killGraceMs?: number;
}

export type Execution =
  | { ok: true; result: RunCommandResult }
  | { ok: false; code: 'workdir_escape'; reason: string };

/**
 * Runs a plan: the working directory is checked again immediately before spawn (it must still
 * resolve inside the roots, to the same real path as when validated), then the command runs,
 * inside bwrap when the plan is sandboxed (else in a PID namespace of its own when the plan has
 * one), its hard timeout capped by the policy's maxSeconds.
 */
export async function executePlan(
  plan: ExecutionPlan,
  options: ExecuteOptions,
): Promise<Execution> {
  const again = checkWorkdir(plan.cwd, plan.roots, { home: plan.home });
  if (!again.ok) return { ok: false, code: again.code, reason: `at spawn: ${again.reason}` };
  if (again.realPath !== plan.realCwd) {
    return {
      ok: false,
      code: 'workdir_escape',
      reason: `at spawn: the working directory now resolves to ${again.realPath}, not ${plan.realCwd}`,
    };
  }
  const program = checkProgramInside(plan.argv[0] as string, again.realPath);
  if (!program.ok) return { ok: false, code: program.code, reason: `at spawn: ${program.reason}` };
  // The sandbox binds the directory itself, opened here and checked through its descriptor.
  const pinned = plan.sandbox ? pinDirectory(again.realPath) : null;
  if (pinned !== null && 'reason' in pinned) {
    return { ok: false, code: 'workdir_escape', reason: `at spawn: ${pinned.reason}` };
  }
  try {
    const argv = plan.sandbox
      ? sandboxArgv(
          {
            bwrapPath: plan.sandbox.bwrapPath,
            workdir: again.realPath,
            network: plan.sandbox.network,
            ...(plan.sandbox.hidePaths && { hidePaths: plan.sandbox.hidePaths }),
            ...(plan.env.PATH !== undefined && { searchPath: plan.env.PATH }),
            workdirFd: 3,
            readOnlyWorkdir: !plan.sandbox.writable,
            ...(plan.sandbox.tmpBytes !== undefined && { tmpBytes: plan.sandbox.tmpBytes }),
            sizedTmpfs: plan.sandbox.sizedTmpfs,
          },
          plan.argv,
        )
      : plan.pidNamespace
        ? pidNamespaceArgv(plan.pidNamespace.bwrapPath, again.realPath, plan.argv)
        : plan.argv;
    const timeoutMs =
      plan.maxTimeoutMs === null
        ? options.timeoutMs
        : Math.min(options.timeoutMs, plan.maxTimeoutMs);
    const result = await runCommand({
      ...options,
      timeoutMs,
      argv,
      cwd: again.realPath,
      env: plan.env,
      pidNamespace: plan.sandbox !== null || plan.pidNamespace !== null,
      ...(pinned !== null && { passFds: [pinned.fd] }),
    });
    return { ok: true, result };
  } finally {
    if (pinned !== null) closeSync(pinned.fd);
  }
}

/**
 * Opens directory `realPath` (no symlink at its end) and checks, through the descriptor, that
 * it is the directory that path named when it was checked: a component swapped for a symlink
 * meanwhile is caught here, and after this the descriptor, not the path, is what gets bound.
 */
function pinDirectory(realPath: string): { fd: number } | { reason: string } {
  let fd: number;
  try {
    fd = openSync(realPath, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch (error) {
    return { reason: `cannot open the working directory ${realPath}: ${(error as Error).message}` };
  }
  let opened: string;
  try {
    opened = readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    opened = '';
  }
  if (opened !== realPath) {
    closeSync(fd);
    return {
      reason: `the working directory ${realPath} changed as it was opened (it is now ${opened || 'unknown'})`,
    };
  }
  return { fd };
}
