import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { writeFileAtomic } from '@ctxbus/client/files';
import { CtxbusError } from '@ctxbus/core/contract';

export type JsonObject = Record<string, unknown>;

/** Reads a JSON settings file; a missing file is `{}`, a file that is not a JSON object is an error. */
export function readJsonFile(path: string): JsonObject {
  if (!existsSync(path)) return {};
  const text = readFileSync(path, 'utf8');
  if (text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new CtxbusError(
      'validation_failed',
      `${path} is not valid JSON (${(error as Error).message}); fix it first, nothing was changed`,
    );
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new CtxbusError(
      'validation_failed',
      `${path} does not hold a JSON object; nothing was changed`,
    );
  }
  return value as JsonObject;
}

/** Writes atomically, keeping the file private when it holds a token. */
export function writeJsonFile(path: string, value: JsonObject, secret: boolean): void {
  mkdirSync(dirname(path), { recursive: true });
  // A settings file linked in from the user's dotfiles stays a link.
  writeFileAtomic(path, `${JSON.stringify(value, null, 2)}\n`, {
    mode: secret ? 0o600 : 0o644,
    followLink: true,
  });
}

export function objectAt(parent: JsonObject, key: string): JsonObject {
  const value = parent[key];
  if (value !== null && typeof value === 'object' && !Array.isArray(value))
    return value as JsonObject;
  const fresh: JsonObject = {};
  parent[key] = fresh;
  return fresh;
}

export function arrayAt(parent: JsonObject, key: string): unknown[] {
  const value = parent[key];
  if (Array.isArray(value)) return value;
  const fresh: unknown[] = [];
  parent[key] = fresh;
  return fresh;
}
