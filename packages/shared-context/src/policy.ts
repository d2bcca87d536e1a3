import { existsSync, lstatSync, mkdirSync, realpathSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { CtxbusError } from '@ctxbus/core/contract';
import type { SharedContextPaths } from './paths.js';
import { AGENT_ID_PATTERN, assertAgentId } from './paths.js';

export type WriteMode = 'create' | 'overwrite' | 'append';

export interface WriteRequest {
  /** The agent that writes (its own id; the curator writes as `curator`). */
  agent: string;
  mode: WriteMode;
  /** True for the curator job: opens the curator-only files. */
  curator?: boolean;
}

/** Why a write was refused: `details.reason` of the `forbidden` error. */
export type PolicyViolation =
  | 'bad_path'
  | 'path_traversal'
  | 'symlink_escape'
  | 'not_owner'
  | 'curator_only'
  | 'append_only'
  | 'not_allowed';

/** The rule a relative path falls under (the README's policy table). */
export type PathRule =
  | { kind: 'agent-owned'; owner: string; modes: readonly WriteMode[] }
  | { kind: 'append-only'; modes: readonly WriteMode[] }
  | { kind: 'curator-only'; modes: readonly WriteMode[] }
  | { kind: 'none' };

const ALL: readonly WriteMode[] = ['create', 'overwrite', 'append'];
const WEEK_FILE = /^feedback\/\d{4}-W\d{2}\.jsonl$/;

function refuse(reason: PolicyViolation, message: string, relPath: string, extra = {}): never {
  throw new CtxbusError('forbidden', `shared-context write refused: ${message}`, {
    details: { reason, path: relPath, ...extra },
  });
}

/**
 * Splits a relative path into its segments, refusing what could leave the directory or hide
 * a path: absolute paths, `..` and `.` segments, empty segments, backslashes, NUL.
 */
export function pathSegments(relPath: string): string[] {
  if (typeof relPath !== 'string' || relPath.length === 0 || relPath.length > 1024) {
    refuse('bad_path', 'the path must be 1-1024 characters', String(relPath));
  }
  if (relPath.includes('\u0000') || relPath.includes('\\')) {
    refuse('bad_path', 'the path must not contain NUL or backslashes', relPath);
  }
  if (relPath.startsWith('/')) refuse('path_traversal', 'absolute paths are not allowed', relPath);
  const segments = relPath.split('/');
  for (const segment of segments) {
    if (segment === '..') refuse('path_traversal', `'..' in ${relPath}`, relPath);
    if (segment === '' || segment === '.') {
      refuse('bad_path', `empty or '.' segment in ${relPath}`, relPath);
    }
  }
  return segments;
}

/** The rule for a relative path (no I/O). */
export function ruleFor(relPath: string): PathRule {
  const segments = pathSegments(relPath);
  const [top, second, ...rest] = segments;
  if ((top === 'agent-outputs' || top === 'staging') && second && rest.length > 0) {
    return { kind: 'agent-owned', owner: second, modes: ALL };
  }
  if (top === 'kpis' && second && rest.length === 0 && second.endsWith('.json')) {
    return {
      kind: 'agent-owned',
      owner: second.slice(0, -'.json'.length),
      modes: ['create', 'overwrite'],
    };
  }
  if (relPath === 'feedback/inbox.jsonl' || relPath === 'priorities.inbox.md') {
    return { kind: 'append-only', modes: ['append'] };
  }
  if (WEEK_FILE.test(relPath)) return { kind: 'curator-only', modes: ['create', 'append'] };
  if (relPath === 'priorities.md' || relPath === '.curator-state.json') {
    return { kind: 'curator-only', modes: ALL };
  }
  if ((top === 'roundtable' || top === 'cross-signals' || top === 'staging-archive') && second) {
    return { kind: 'curator-only', modes: ALL };
  }
  return { kind: 'none' };
}

/**
 * Refuses a path whose existing part resolves outside the root (a symlinked directory or
 * file pointing elsewhere), or anywhere but where its name says (a link inside the root:
 * `agent-outputs/codex` linked to `agent-outputs/alice` put codex's writes in alice's folder,
 * published as hers), or whose target is itself a symlink.
 */
function assertInsideRoot(paths: SharedContextPaths, relPath: string, target: string): void {
  if (!existsSync(paths.root)) {
    throw new CtxbusError(
      'not_found',
      `the shared-context directory ${paths.root} does not exist: bootstrap it first (ctxbus shared-context init)`,
      { details: { path: paths.root } },
    );
  }
  const root = realpathSync(paths.root);
  let existing = dirname(target);
  while (!existsSync(existing)) existing = dirname(existing);
  const real = realpathSync(existing);
  const inside = relative(root, real);
  if (
    inside.startsWith(`..${sep}`) ||
    inside === '..' ||
    (inside !== '' && inside.startsWith(sep))
  ) {
    refuse('symlink_escape', `${relPath} resolves outside the shared-context directory`, relPath);
  }
  if (inside !== relative(resolve(paths.root), resolve(existing))) {
    refuse('symlink_escape', `${relPath} goes through a symbolic link in the directory`, relPath);
  }
  if (existsSync(target) || isDanglingLink(target)) {
    if (lstatSync(target).isSymbolicLink()) {
      refuse('symlink_escape', `${relPath} is a symbolic link`, relPath);
    }
  }
}

function isDanglingLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/**
 * The write policy of seed 001, enforced. Returns the absolute path when `agent` may write
 * `relPath` (relative to the shared-context root, `/`-separated) in `mode`; otherwise throws
 * `CtxbusError('forbidden')` with `details.reason` (see `PolicyViolation`), or
 * `validation_failed` for an invalid agent id. The root must exist (see bootstrap).
 *
 * - `agent-outputs/<agent>/…`, `staging/<agent>/…`: the owning agent, any mode;
 *   `kpis/<agent>.json`: the owning agent, create or overwrite (last write wins).
 * - `feedback/inbox.jsonl`, `priorities.inbox.md`: any agent, append only.
 * - `priorities.md`, `roundtable/…`, `cross-signals/…`, `staging-archive/…`,
 *   `feedback/<YYYY-Www>.jsonl` (create/append), `.curator-state.json`: the curator only.
 * - Anything else: nobody.
 */
export function assertWriteAllowed(
  paths: SharedContextPaths,
  relPath: string,
  request: WriteRequest,
): string {
  assertAgentId(request.agent);
  const rule = ruleFor(relPath);
  switch (rule.kind) {
    case 'none':
      refuse('not_allowed', `${relPath} is not a writable shared-context location`, relPath);
      break;
    case 'agent-owned':
      if (!AGENT_ID_PATTERN.test(rule.owner) || rule.owner.includes('..')) {
        refuse('bad_path', `${JSON.stringify(rule.owner)} is not an agent id`, relPath);
      }
      if (rule.owner !== request.agent) {
        refuse(
          'not_owner',
          `${relPath} belongs to agent ${rule.owner}, not ${request.agent}`,
          relPath,
          { owner: rule.owner, agent: request.agent },
        );
      }
      break;
    case 'append-only':
      break;
    case 'curator-only':
      if (!request.curator) {
        refuse('curator_only', `${relPath} is written by the curator only`, relPath);
      }
      break;
  }
  if (!rule.modes.includes(request.mode)) {
    refuse(
      rule.kind === 'append-only' ? 'append_only' : 'not_allowed',
      `${relPath} accepts ${rule.modes.join(' or ')}, not ${request.mode}`,
      relPath,
      { mode: request.mode },
    );
  }
  const target = join(paths.root, ...relPath.split('/'));
  assertInsideRoot(paths, relPath, target);
  return target;
}

/** Creates the parent directories of an allowed target, checking again that none escapes. */
export function prepareParent(paths: SharedContextPaths, relPath: string, target: string): void {
  mkdirSync(dirname(target), { recursive: true });
  assertInsideRoot(paths, relPath, target);
}
