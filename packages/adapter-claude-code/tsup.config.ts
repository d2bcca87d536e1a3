import { defineConfig } from 'tsup';
import { library, selfContained } from '../../tsup.base.ts';

export default defineConfig([
  library(['src/index.ts'], 'node'),
  // The hook and the MCP server ship inside the plugin folder, self-contained: Claude Code runs
  // them with plain `node`, from a plugin cache where no node_modules exist. Each entry checks
  // the Node version before it loads its main file, so an old Node fails open. The hook's main
  // file is CommonJS (ctxbus-claude-hook-main.cjs, see hook-entry.ts).
  selfContained({ 'ctxbus-claude-hook-main': 'src/hook-main.ts' }, 'plugin/dist', 'cjs'),
  selfContained(
    {
      'ctxbus-claude-hook': 'src/hook-entry.ts',
      // The live push process (install --live): one per session, started by SessionStart.
      'ctxbus-claude-live': 'src/live-main.ts',
      'ctxbus-mcp': 'src/mcp-entry.ts',
      'ctxbus-mcp-main': 'src/mcp-main.ts',
    },
    'plugin/dist',
    'esm',
  ),
]);
