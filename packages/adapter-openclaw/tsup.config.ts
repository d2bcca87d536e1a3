import { defineConfig } from 'tsup';
import { library } from '../../tsup.base.ts';

export default defineConfig([
  library(['src/index.ts'], 'node'),
  // The OpenClaw plugin itself: one self-contained module in plugin/dist (OpenClaw installs no
  // dependencies for a local plugin), except the host's SDK, which OpenClaw provides.
  {
    entry: { index: 'src/plugin-entry.ts' },
    outDir: 'plugin/dist',
    format: ['esm'],
    platform: 'node',
    target: 'node22',
    noExternal: [/^(?!openclaw(\/|$)).*/],
    external: ['openclaw'],
    removeNodeProtocol: false,
    clean: false,
    sourcemap: false,
    minify: true,
    splitting: false,
    // Bundled CommonJS dependencies may call require(); give the ESM bundle one.
    banner: {
      js: "import { createRequire as __ctxbusCreateRequire } from 'node:module'; const require = __ctxbusCreateRequire(import.meta.url);",
    },
  },
]);
