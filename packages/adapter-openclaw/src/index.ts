export type { AgentState } from './agent-state.js';
export { readAgentState } from './agent-state.js';
export { knownConfigPath } from './config-path.js';
export type { HookDeps, TurnContext } from './hooks.js';
export { buildTurnContext, lastAssistantText, TOOL_GUIDE, turnItems } from './hooks.js';
export type {
  InstalledPlugin,
  InstallPlan,
  OpenClawInstallOptions,
  OpenClawInstallResult,
  OpenClawPluginSource,
  OpenClawRunner,
  UninstallPlan,
} from './install-openclaw.js';
export {
  installedHub,
  installedPlugin,
  installedToken,
  installOpenClaw,
  MCP_SERVER_NAME,
  mcpServerEntry,
  openclawPluginDir,
  openclawRunner,
  planInstall,
  planUninstall,
  pluginSource,
  pluginToInstallOver,
  readOpenClawConfig,
  uninstallOpenClaw,
} from './install-openclaw.js';
export type { PluginConfig, ResolvedConfig } from './plugin-config.js';
export {
  DEFAULT_TOKEN_BUDGET,
  PLUGIN_ID,
  pluginConfigJsonSchema,
  pluginConfigSchema,
  resolvePluginConfig,
} from './plugin-config.js';
export type { RegisterOptions } from './register-plugin.js';
export { registerCtxbus } from './register-plugin.js';
export { CAPABILITY_REQUEST_TOOL, PLUGIN_TOOL_NAMES } from './tools.js';
