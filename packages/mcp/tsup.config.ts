import { defineConfig } from 'tsup';
import { library } from '../../tsup.base.ts';

// stdio-bin is the executable MCP clients spawn (and `ctxbus mcp` will wrap).
export default defineConfig(
  library(['src/index.ts', 'src/tools-entry.ts', 'src/stdio-bin.ts'], 'node'),
);
