import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { writeFileAtomic as writeAtomic } from '@ctxbus/client/files';
import { CtxbusError, redactSecrets } from '@ctxbus/core/contract';
import type { SharedContextPaths } from './paths.js';
import type { WriteRequest } from './policy.js';
import { assertWriteAllowed, prepareParent } from './policy.js';

/** Whole-file writes go through a temporary file and a rename: readers never see half. */
export function writeFileAtomic(target: string, text: string): void {
  writeAtomic(target, text, { mode: 0o644 });
}

/**
 * What a writer may put on disk: secrets (keys, tokens, passwords in URLs, ...) replaced by
 * `[REDACTED:<kind>]` first. Idempotent, so a retried write compares equal to its file.
 */
export function redactedForDisk(text: string): string {
  return redactSecrets(text, 'file').text;
}

/** A whole-file write under the policy (`create` refuses an existing file). Returns the path. */
export function policyWrite(
  paths: SharedContextPaths,
  relPath: string,
  text: string,
  request: WriteRequest,
): string {
  if (request.mode === 'append') return policyAppend(paths, relPath, text, request);
  const target = assertWriteAllowed(paths, relPath, request);
  prepareParent(paths, relPath, target);
  if (request.mode === 'create' && existsSync(target)) {
    throw new CtxbusError('conflict', `${relPath} exists already`, { details: { path: relPath } });
  }
  writeFileAtomic(target, redactedForDisk(text));
  return target;
}

/** An append under the policy: the file is opened for appending only, never truncated. */
export function policyAppend(
  paths: SharedContextPaths,
  relPath: string,
  text: string,
  request: WriteRequest,
): string {
  const target = assertWriteAllowed(paths, relPath, { ...request, mode: 'append' });
  prepareParent(paths, relPath, target);
  appendFileSync(target, redactedForDisk(text), { encoding: 'utf8', flag: 'a' });
  return target;
}

/** The file's text, or null when it does not exist. */
export function readTextOrNull(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}
