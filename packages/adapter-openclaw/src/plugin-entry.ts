import { definePluginEntry } from 'openclaw/plugin-sdk/plugin-entry';
import { PLUGIN_ID } from './plugin-config.js';
import { registerCtxbus } from './register-plugin.js';

// The module OpenClaw loads (openclaw.extensions in plugin/package.json), bundled
// self-contained into plugin/dist: OpenClaw installs no dependencies for a local plugin.
// biome-ignore lint/style/noDefaultExport: OpenClaw loads a plugin module's default export.
export default definePluginEntry({
  id: PLUGIN_ID,
  name: 'ctxbus',
  description:
    "The team's shared context from ctxbus in every turn; decisions and outcomes back to the bus; work this agent cannot do routed to a runtime that can.",
  register(api) {
    registerCtxbus(api);
  },
});
