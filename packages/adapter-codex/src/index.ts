export type {
  CodexAppServer,
  CodexCommandResult,
  CodexRunner,
} from './codex-commands.js';
export { checkCodex, codexRunner, runOrFail } from './codex-commands.js';
export type { CodexHookEvent, CodexHookInput } from './hook-input.js';
export { parseCodexHookInput } from './hook-input.js';
export type { CodexHookContext, CodexHookOutput } from './hooks.js';
export {
  MAX_INJECTED_BYTES,
  PROMPT_TOKEN_BUDGET,
  runCodexHookEvent,
  SESSION_START_TOKEN_BUDGET,
} from './hooks.js';
export type { HubTarget } from './hub-target.js';
export { CODEX_RUNTIME, findHubTarget } from './hub-target.js';
export type { CodexInstall, CodexInstallOptions, CodexInstallResult } from './install-codex.js';
export {
  codexHomeDir,
  HOOK_SCRIPT,
  inspectCodex,
  installCodex,
  MCP_SCRIPT,
  MCP_SERVER_NAME,
  pluginDir,
  uninstallCodex,
} from './install-codex.js';
export type { CodexPermissionInput, PermissionContext, PermissionOutput } from './permission.js';
export {
  approvalWaitSeconds,
  DEFAULT_APPROVAL_WAIT_SECONDS,
  PERMISSION_TOOL,
  parsePermissionInput,
  runPermissionRequest,
} from './permission.js';
export type { PermissionHub, PermissionTask } from './permission-hub.js';
export { PermissionHubError, permissionHub } from './permission-hub.js';
