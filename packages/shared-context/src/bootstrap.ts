import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SharedContextPaths } from './paths.js';

/** The heading of the curated top section of `priorities.md`. */
export const CANONICAL_HEADING = '## CANONICAL (curator)';
/** The heading of the section the curator appends priorities-inbox entries to. */
export const AUTOMATED_HEADING = '## Automated inputs';

export const PRIORITIES_TEMPLATE = `# Priorities

${CANONICAL_HEADING}
<!-- The curated priority stack, most important first. People edit this section freely; the
daily curator only adds lines (merged from staging/, each ending in a staged: marker) and
never rewrites or removes yours. -->

${AUTOMATED_HEADING}
<!-- Timestamped entries the curator merged from priorities.inbox.md, oldest first. -->
`;

export const PRIORITIES_INBOX_TEMPLATE = `# Priorities inbox (append-only)

<!--
Agents and people append entries at the end of this file; the daily curator merges new ones
into the "Automated inputs" section of priorities.md. Never edit or delete an entry.
Each entry is a heading with an ISO timestamp and the agent id, then one or more lines of
text, none of them starting with '#':

    ## 2026-01-31T09:00:00.000Z research-agent
    Prioritise the Acme renewal this week: the contract ends on Friday.
-->
`;

/** The directories the contract names, relative to the root. */
export const SHARED_CONTEXT_DIRS = [
  'agent-outputs',
  'staging',
  'staging-archive',
  'feedback',
  'roundtable',
  'cross-signals',
  'kpis',
  'rubrics',
] as const;

export interface BootstrapResult {
  /** What this call created, relative to the root (empty on a second run). */
  created: string[];
}

function createIfMissing(path: string, text: string): boolean {
  if (existsSync(path)) return false;
  try {
    // 'wx' fails when another process created the file in between: never overwrite.
    writeFileSync(path, text, { encoding: 'utf8', flag: 'wx' });
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

/**
 * Creates the directory, its subdirectories and the two templates (`priorities.md`,
 * `priorities.inbox.md`) where missing. Idempotent; never overwrites an existing file.
 */
export function bootstrapSharedContext(paths: SharedContextPaths): BootstrapResult {
  const created: string[] = [];
  if (!existsSync(paths.root)) created.push('.');
  mkdirSync(paths.root, { recursive: true });
  for (const dir of SHARED_CONTEXT_DIRS) {
    const path = join(paths.root, dir);
    if (existsSync(path)) continue;
    mkdirSync(path, { recursive: true });
    created.push(`${dir}/`);
  }
  if (createIfMissing(paths.priorities, PRIORITIES_TEMPLATE)) created.push('priorities.md');
  if (createIfMissing(paths.prioritiesInbox, PRIORITIES_INBOX_TEMPLATE)) {
    created.push('priorities.inbox.md');
  }
  return { created };
}
