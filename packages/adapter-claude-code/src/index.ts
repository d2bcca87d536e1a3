export type { HookEvent, HookInput } from './hook-input.js';
export { HOOK_EVENTS, parseHookInput } from './hook-input.js';
export type { HookContext, HookOutput } from './hooks.js';
export { MAX_INJECTED_CHARS, runHookEvent, SESSION_START_TOKEN_BUDGET } from './hooks.js';
export type {
  ClaudeCodeInstall,
  InstallOptions,
  InstallResult,
  InstallTarget,
} from './install.js';
export {
  HOOK_SCRIPT,
  inspectClaudeCode,
  installClaudeCode,
  installFiles,
  MCP_SCRIPT,
  MCP_SERVER_NAME,
  pluginDir,
  uninstallClaudeCode,
} from './install.js';
