import { defineConfig } from 'tsup';
import { library } from '../../tsup.base.ts';

export default defineConfig([
  library(['src/index.ts'], 'node'),
  // The OpenClaw plugin itself: self-contained modules in plugin/dist (OpenClaw installs no
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
    clean: true,
    sourcemap: false,
    minify: true,
    // Chunks load on use (the tokenizer, only for the curator's digest).
    splitting: true,
    // Bundled CommonJS dependencies may call require(); give the ESM bundle one.
    banner: {
      js: "import { createRequire as __ctxbusCreateRequire } from 'node:module'; const require = __ctxbusCreateRequire(import.meta.url);",
    },
  },
]);
