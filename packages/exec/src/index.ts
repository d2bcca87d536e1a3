// @ctxbus/exec: the remote-execution worker's engine (Node only). Deny by default: see
// README.md for what is checked and in what order.

export type { ApprovalCheck, ApprovalInput, ApprovalPayload, CommandIdentity } from './approval.js';
export {
  commandDigest,
  DEFAULT_APPROVAL_LIFETIME_MS,
  scriptHashFor,
  signApproval,
  verifyApproval,
} from './approval.js';
export type {
  AllowEntry,
  CommandCheckOptions,
  CommandDecision,
  CommandRefusalCode,
} from './command-policy.js';
export {
  checkCommand,
  codeRunningEntry,
  INLINE_EVAL_RULES,
  inlineEvalReason,
  parseAllowEntry,
  parseAllowList,
  programName,
  REST_TOKEN,
} from './command-policy.js';
export type {
  ApprovalRequest,
  ExecuteOptions,
  Execution,
  ExecutionPlan,
  ExecutionPolicy,
  ExecutionRequest,
  Preparation,
  PrepareExecutionInput,
  Refusal,
  RefusalCode,
} from './prepare-execution.js';
export { executePlan, executionRequestSchema, prepareExecution } from './prepare-execution.js';
export type { OutputStream, RunCommandOptions, RunCommandResult } from './run-command.js';
export { runCommand } from './run-command.js';
export type { SandboxDetectOptions, SandboxLayout, SandboxStatus } from './sandbox.js';
export {
  ctxbusPaths,
  detectPidNamespace,
  detectSandbox,
  findExecutable,
  pidNamespaceArgv,
  sandboxArgv,
} from './sandbox.js';
export type { ScrubbedEnv, ScrubEnvOptions } from './scrub-env.js';
export { BASE_ENV_NAMES, DEFAULT_CHILD_PATH, deniedEnvReason, scrubEnv } from './scrub-env.js';
export type { WorkdirCheck } from './workdir.js';
export { checkProgramInside, checkWorkdir, expandHome, resolveRoots } from './workdir.js';
