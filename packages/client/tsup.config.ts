import { defineConfig } from 'tsup';
import { library } from '../../tsup.base.ts';

// The root entry runs anywhere (fetch, WebCrypto); the light client and the outbox are for
// hooks on Node, behind their own subpaths so the root never loads node: modules.
export default defineConfig({
  ...library(
    { index: 'src/index.ts', light: 'src/hub-lite.ts', outbox: 'src/outbox.ts' },
    'neutral',
  ),
  external: [/^node:/],
  removeNodeProtocol: false,
});
