import { existsSync, readdirSync } from 'node:fs';
import { join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The runtimes whose files (hook scripts, plugins) ship with the published package. */
export type PackagedRuntime = 'claude-code' | 'openclaw' | 'codex';

/**
 * A runtime's files inside the published `ctxbus` package: `./dev pack` bundles the adapters
 * into the CLI's dist/ and puts each adapter's runtime files in runtimes/<runtime> beside it
 * (Claude Code's plugin folder; OpenClaw's plugin as a packed npm tarball).
 * Undefined in a clone (no runtimes/ there): each adapter then uses its own plugin folder.
 */
export function packagedRuntimeDir(runtime: PackagedRuntime): string | undefined {
  const dir = join(fileURLToPath(new URL('../runtimes/', import.meta.url)), runtime);
  return existsSync(dir) ? dir : undefined;
}

/** The file name `./dev pack` gives the OpenClaw plugin's tarball. */
export const OPENCLAW_PLUGIN_TARBALL = /^ctxbus-openclaw-plugin-(\d[^/]*)\.tgz$/;

/** The packed OpenClaw plugin in the published package (undefined in a clone). */
export function packagedOpenClawPlugin(): { tarball: string; version: string } | undefined {
  const dir = packagedRuntimeDir('openclaw');
  if (!dir) return undefined;
  for (const name of readdirSync(dir)) {
    const version = OPENCLAW_PLUGIN_TARBALL.exec(name)?.[1];
    if (version) return { tarball: join(dir, name), version };
  }
  return undefined;
}

/**
 * npm's npx cache directory this CLI runs from (`npx ctxbus ...`), or null: files there go
 * when npm cleans its cache, so a runtime wired to them breaks later without a word.
 */
export function npxCacheDir(path = fileURLToPath(import.meta.url)): string | null {
  const marker = `${sep}_npx${sep}`;
  const at = path.indexOf(marker);
  if (at < 0) return null;
  const hash = path.slice(at + marker.length).split(sep)[0] ?? '';
  return path.slice(0, at + marker.length) + hash;
}
