// The file Claude Code runs. It turns on Node's compile cache before loading the hook, so that
// after the first run the hook's code is not compiled again (tens of ms per hook call).
import { enableCompileCache } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

try {
  enableCompileCache(process.env.CTXBUS_COMPILE_CACHE ?? join(tmpdir(), 'ctxbus-compile-cache'));
} catch {
  // an unwritable cache only costs speed
}
await import(new URL('./ctxbus-claude-hook-main.js', import.meta.url).href);
