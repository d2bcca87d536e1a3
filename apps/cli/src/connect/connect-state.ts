import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { writeFileAtomic } from '@ctxbus/client/files';
import { CtxbusError } from '@ctxbus/core/light';
import { z } from 'zod';
import { configDir } from '../credentials.js';

// What `ctxbus connect` added, so `ctxbus disconnect` removes exactly that: per runtime, the
// hub, the token it minted or saved, and each file it wrote with a copy of what was there
// before (by content hash, 0600 beside the credentials) and the hash it left. A file still as
// connect left it is put back byte for byte; one changed since keeps those changes (the
// adapter's uninstall takes out only what was ours).

const fileRecordSchema = z.strictObject({
  path: z.string().min(1),
  /** sha256 of the content before connect (its copy is in the backups); null: no file. */
  before: z.string().nullable(),
  /** sha256 of what connect left; null: no file. */
  after: z.string().nullable(),
  mode: z.number().int().optional(),
});

const connectionSchema = z.strictObject({
  hub: z.string().min(1),
  connectedAt: z.string(),
  teamId: z.string().min(1),
  /** The token connect minted (revoked by disconnect); null when it reused one. */
  tokenId: z.string().nullable(),
  /** Whether connect saved the runtime's token in the credentials (disconnect forgets it). */
  savedToken: z.boolean(),
  /**
   * The SHA-256 of the token connect saved: disconnect forgets the saved token only while it is
   * that one (a token the user saved since, with token create --save, stays). Absent in state
   * written before it was recorded.
   */
  savedTokenSha256: z.string().optional(),
  files: z.array(fileRecordSchema),
});

const stateSchema = z.strictObject({
  version: z.literal(1),
  connections: z.record(z.string(), connectionSchema),
});

export type FileRecord = z.infer<typeof fileRecordSchema>;
export type Connection = z.infer<typeof connectionSchema>;
export type ConnectState = z.infer<typeof stateSchema>;

export const statePath = () => join(configDir(), 'connections.json');
const backupDir = () => join(configDir(), 'connect-backups');

export function readConnectState(path = statePath()): ConnectState {
  if (!existsSync(path)) return { version: 1, connections: {} };
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    throw new CtxbusError('validation_failed', `${path} is not JSON: fix or delete it`);
  }
  const parsed = stateSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new CtxbusError(
      'validation_failed',
      `${path}: ${issue?.path.join('.') || 'file'}: ${issue?.message ?? 'invalid'}`,
    );
  }
  return parsed.data;
}

/** Saves the state atomically (the record of what to undo); removes it when empty. */
export function writeConnectState(state: ConnectState, path = statePath()): void {
  if (Object.keys(state.connections).length === 0) {
    rmSync(path, { force: true });
    return;
  }
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeFileAtomic(path, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600, durable: true });
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The file's content hash, or null when there is none. */
export function fileHash(path: string): string | null {
  return existsSync(path) ? sha256(readFileSync(path, 'utf8')) : null;
}

/** Records a file before connect writes it: its hash, and a copy of its content. */
export function snapshotFile(path: string): FileRecord {
  if (!existsSync(path)) return { path, before: null, after: null };
  const content = readFileSync(path, 'utf8');
  const before = sha256(content);
  mkdirSync(backupDir(), { recursive: true, mode: 0o700 });
  const copy = join(backupDir(), before);
  if (!existsSync(copy)) writeFileAtomic(copy, content, { mode: 0o600, durable: true });
  return { path, before, after: null, mode: statSync(path).mode & 0o777 };
}

/** Whether the file is still exactly what connect left. */
export const untouchedSince = (record: FileRecord) => fileHash(record.path) === record.after;

/** Puts the file back as it was before connect (removes it if there was none). */
export function restoreFile(record: FileRecord): void {
  if (record.before === null) {
    rmSync(record.path, { force: true });
    return;
  }
  const content = readFileSync(join(backupDir(), record.before), 'utf8');
  writeFileAtomic(record.path, content, {
    mode: record.mode ?? 0o600,
    durable: true,
    followLink: true,
  });
}

/** What `paths` hold now (null: no file), to put back if a runtime's wiring fails midway. */
export function currentContents(paths: readonly string[]): Map<string, string | null> {
  return new Map(paths.map((path) => [path, existsSync(path) ? readFileSync(path, 'utf8') : null]));
}

/**
 * Puts each file back as `contents` says (removes one that was not there), so a wiring that
 * failed after writing one of its files leaves none half-wired. Returns the paths it could not
 * put back.
 */
export function putBack(contents: ReadonlyMap<string, string | null>): string[] {
  const failed: string[] = [];
  for (const [path, text] of contents) {
    try {
      if (text === null) rmSync(path, { force: true });
      else if (!existsSync(path) || readFileSync(path, 'utf8') !== text) {
        writeFileAtomic(path, text, { mode: statSync(path).mode & 0o777, followLink: true });
      }
    } catch {
      failed.push(path);
    }
  }
  return failed;
}

/** Deletes the copies no recorded connection needs any more. */
export function pruneBackups(state: ConnectState): void {
  const needed = new Set(
    Object.values(state.connections).flatMap((connection) =>
      connection.files.map((file) => file.before),
    ),
  );
  const dir = backupDir();
  for (const name of readdirNames(dir)) if (!needed.has(name)) rmSync(join(dir, name));
  if (existsSync(dir) && readdirNames(dir).length === 0)
    rmSync(dir, { recursive: true, force: true });
}

function readdirNames(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir) : [];
}
