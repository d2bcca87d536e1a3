import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The runtimes whose files (hook scripts, plugins) ship with the published package. */
export type PackagedRuntime = 'claude-code' | 'openclaw' | 'codex';

/**
 * A runtime's files inside the published `ctxbus` package: `./dev pack` bundles the adapters
 * into the CLI's dist/ and puts each adapter's plugin folder in runtimes/<runtime> beside it.
 * Undefined in a clone (no runtimes/ there): each adapter then uses its own plugin folder.
 */
export function packagedRuntimeDir(runtime: PackagedRuntime): string | undefined {
  const dir = join(fileURLToPath(new URL('../runtimes/', import.meta.url)), runtime);
  return existsSync(dir) ? dir : undefined;
}
