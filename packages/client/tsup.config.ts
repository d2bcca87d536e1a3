import { defineConfig } from 'tsup';
import { library } from '../../tsup.base.ts';

// The root entry and the wire entry run anywhere (fetch, WebCrypto); the light client, the
// outbox, the session kernel, the turn log, the atomic file write and the saved hub are for Node, behind their
// own subpaths so the root never loads node: modules.
export default defineConfig({
  ...library(
    {
      index: 'src/index.ts',
      wire: 'src/wire.ts',
      light: 'src/hub-lite.ts',
      outbox: 'src/outbox.ts',
      session: 'src/session-kernel.ts',
      'turn-log': 'src/turn-log.ts',
      files: 'src/atomic-file.ts',
      'saved-hub': 'src/saved-hub.ts',
    },
    'neutral',
  ),
  external: [/^node:/],
  removeNodeProtocol: false,
});
