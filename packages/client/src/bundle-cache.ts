import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sha256Hex } from '@ctxbus/core/light';
import { writeFileAtomic } from './atomic-file.js';

// The last good bundle per runtime and team, beside the session state (`<stateDir>/
// bundle-cache.json`, 0600), so a turn with the hub down or hung still starts from the team's
// shared context, marked as possibly stale with its age. It holds only what the hub gave this
// runtime's token (the formatted bundle, which the hub builds without other runtimes' private
// items), and it is bounded: entries past the byte cap go oldest first.

/** The cache file's size cap, in bytes of its JSON. */
export const BUNDLE_CACHE_MAX_BYTES = 256 * 1024;

export interface CachedBundle {
  text: string;
  /** When the hub gave it (epoch ms). */
  savedAtMs: number;
}

type Entries = Record<string, CachedBundle>;

export function bundleCacheFile(stateDir: string): string {
  return join(stateDir, 'bundle-cache.json');
}

/**
 * The cache key of one runtime's view of one team: the runtime and a hash of its token (a token
 * belongs to one team and one runtime), so no token is written to the cache. The hub's address
 * is left out: a hub that moved, or is reached another way, still serves the same team.
 */
export function bundleCacheKey(runtime: string, token: string): string {
  // core's SHA-256 (JavaScript): node:crypto would cost each hook run ~5 ms to load.
  const digest = sha256Hex(token);
  return `${runtime}:${digest.slice(0, 24)}`;
}

function readEntries(file: string): Entries {
  try {
    const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'));
    if (parsed === null || typeof parsed !== 'object') return {};
    const entries: Entries = {};
    for (const [key, value] of Object.entries(parsed as Record<string, unknown>)) {
      const entry = value as Partial<CachedBundle> | null;
      if (typeof entry?.text === 'string' && Number.isFinite(entry.savedAtMs)) {
        entries[key] = { text: entry.text, savedAtMs: entry.savedAtMs as number };
      }
    }
    return entries;
  } catch {
    return {};
  }
}

export function readCachedBundle(stateDir: string, key: string): CachedBundle | null {
  return readEntries(bundleCacheFile(stateDir))[key] ?? null;
}

/**
 * Stores `key`'s bundle, then evicts the oldest entries until the file is within `maxBytes`
 * (the newest entry stays; one longer than the cap alone is not stored).
 */
export function writeCachedBundle(
  stateDir: string,
  key: string,
  bundle: CachedBundle,
  maxBytes = BUNDLE_CACHE_MAX_BYTES,
): void {
  const file = bundleCacheFile(stateDir);
  const entries = readEntries(file);
  entries[key] = bundle;
  const byAge = Object.entries(entries).sort(([, a], [, b]) => b.savedAtMs - a.savedAtMs);
  const kept: Entries = {};
  let size = 2;
  for (const [name, entry] of byAge) {
    const cost = Buffer.byteLength(JSON.stringify({ [name]: entry })) + 1;
    if (size + cost > maxBytes) break;
    kept[name] = entry;
    size += cost;
  }
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  writeFileAtomic(file, JSON.stringify(kept), { mode: 0o600 });
}

/** "12 min ago", "3 h ago", "2 days ago": the stale bundle's age, coarse so it reads at a glance. */
export function ageText(ms: number): string {
  const minutes = Math.floor(Math.max(ms, 0) / 60_000);
  if (minutes < 1) return 'less than a minute ago';
  if (minutes < 120) return `${minutes} min ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ago`;
  return `${Math.floor(hours / 24)} days ago`;
}
