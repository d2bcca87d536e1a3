// Writes plugin/openclaw.plugin.json from the code (its tools and the config's JSON Schema);
// src/tools.test.ts fails when the committed file and the code disagree. Run: pnpm manifest
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PLUGIN_ID, pluginConfigJsonSchema } from '../src/plugin-config.ts';
import { SHARED_CONTEXT_TOOL_NAMES } from '../src/shared-context.ts';
import { PLUGIN_TOOL_NAMES } from '../src/tools.ts';

const manifest = {
  id: PLUGIN_ID,
  name: 'ctxbus',
  description:
    "The team's shared context from ctxbus in every turn; decisions and outcomes back to the bus; work this agent cannot do routed to a runtime that can.",
  categories: ['developer-tools'],
  activation: { onStartup: true },
  contracts: { tools: [...PLUGIN_TOOL_NAMES, ...SHARED_CONTEXT_TOOL_NAMES] },
  configSchema: pluginConfigJsonSchema(),
};
writeFileSync(
  fileURLToPath(new URL('../plugin/openclaw.plugin.json', import.meta.url)),
  `${JSON.stringify(manifest, null, 2)}\n`,
);
