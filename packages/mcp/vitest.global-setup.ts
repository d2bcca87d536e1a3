import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const root = import.meta.dirname;

function newestSource(directory: string): number {
  let newest = 0;
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path));
    else if (!entry.name.endsWith('.test.ts')) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

function builtAt(): number {
  try {
    return statSync(join(root, 'dist', 'stdio-bin.js')).mtimeMs;
  } catch {
    return 0;
  }
}

/** Builds dist/ unless it is newer than every source (turbo's test task has built it already). */
export function setup(): void {
  const inputs = Math.max(
    newestSource(join(root, 'src')),
    statSync(join(root, 'package.json')).mtimeMs,
    statSync(join(root, 'tsup.config.ts')).mtimeMs,
  );
  if (builtAt() >= inputs) return;
  execFileSync('pnpm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
}
