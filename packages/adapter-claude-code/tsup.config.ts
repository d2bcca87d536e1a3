import { defineConfig } from 'tsup';
import { library } from '../../tsup.base.ts';

export default defineConfig([
  library(['src/index.ts'], 'node'),
  // The hook and the MCP server ship inside the plugin folder, self-contained: Claude Code runs
  // them with plain `node`, from a plugin cache where no node_modules exist. Each entry checks
  // the Node version before it loads its main file, so an old Node fails open.
  // The hook's main file is CommonJS (ctxbus-claude-hook-main.cjs): its builtins load through
  // require, not as ESM namespaces (see hook-entry.ts).
  {
    entry: { 'ctxbus-claude-hook-main': 'src/hook-main.ts' },
    outDir: 'plugin/dist',
    format: ['cjs'],
    platform: 'node',
    target: 'node22',
    noExternal: [/.*/],
    removeNodeProtocol: false,
    clean: false,
    sourcemap: false,
    minify: true,
    splitting: false,
  },
  {
    entry: {
      'ctxbus-claude-hook': 'src/hook-entry.ts',
      // The live push process (install --live): one per session, started by SessionStart.
      'ctxbus-claude-live': 'src/live-main.ts',
      'ctxbus-mcp': 'src/mcp-entry.ts',
      'ctxbus-mcp-main': 'src/mcp-main.ts',
    },
    outDir: 'plugin/dist',
    format: ['esm'],
    platform: 'node',
    target: 'node22',
    noExternal: [/.*/],
    removeNodeProtocol: false,
    clean: false,
    sourcemap: false,
    minify: true,
    splitting: false,
  },
]);
