import { randomBytes } from 'node:crypto';
import {
  appendFileSync,
  existsSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { CtxbusError } from '@ctxbus/core/contract';
import type { SharedContextPaths } from './paths.js';
import type { WriteRequest } from './policy.js';
import { assertWriteAllowed, prepareParent } from './policy.js';

/**
 * Writes through a temporary file in the same directory and a rename, so readers never see
 * half a file. The temporary name starts with a dot: scanners skip it.
 */
export function writeFileAtomic(target: string, text: string): void {
  const temporary = join(
    dirname(target),
    `.${basename(target)}.${randomBytes(6).toString('hex')}.tmp`,
  );
  try {
    writeFileSync(temporary, text, { encoding: 'utf8', mode: 0o644 });
    renameSync(temporary, target);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
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
  writeFileAtomic(target, text);
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
  appendFileSync(target, text, { encoding: 'utf8', flag: 'a' });
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
