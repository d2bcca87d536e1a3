import { defineConfig } from 'tsup';
import { library, selfContained } from '../../tsup.base.ts';

export default defineConfig([
  library(['src/index.ts'], 'node'),
  // The hook and the MCP server Codex runs with plain `node`, self-contained (no node_modules
  // beside them once packaged). Each entry checks the Node version before it loads its main
  // file, so an old Node fails open. The hook's main file is CommonJS
  // (ctxbus-codex-hook-main.cjs, see hook-entry.ts).
  selfContained({ 'ctxbus-codex-hook-main': 'src/hook-main.ts' }, 'plugin/dist', 'cjs'),
  selfContained(
    {
      'ctxbus-codex-hook': 'src/hook-entry.ts',
      'ctxbus-codex-mcp': 'src/mcp-entry.ts',
      'ctxbus-codex-mcp-main': 'src/mcp-main.ts',
    },
    'plugin/dist',
    'esm',
  ),
]);
