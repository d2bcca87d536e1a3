import type { KeyObject } from 'node:crypto';
import { createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import {
  chmodSync,
  cpSync,
  existsSync,
  linkSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname } from 'node:path';
import { CtxbusError } from '@ctxbus/core';

// The hub signs a human's approval of a task's exact command with an Ed25519 key; workers
// check the signature with its public half (GET /api/approvals/key), so an approval cannot be
// forged by a runtime or edited on the way. One key file per hub (hubs sharing a database
// share the file: copy it, or point --approval-key at the same path).

/** How long a request waits for a human, and how long a signed approval lasts. */
export const DEFAULT_APPROVAL_TTL_MS = 30 * 60_000;

export interface ApprovalKey {
  privateKey: KeyObject;
  /** SPKI PEM, what workers fetch. */
  publicKeyPem: string;
  /** Where it came from (null: made for this process only). */
  file: string | null;
}

function fromPrivate(privateKey: KeyObject, file: string | null): ApprovalKey {
  if (privateKey.asymmetricKeyType !== 'ed25519') {
    throw new CtxbusError(
      'validation_failed',
      `${file ?? 'the approval key'}: not an Ed25519 private key`,
    );
  }
  const publicKeyPem = createPublicKey(privateKey)
    .export({ type: 'spki', format: 'pem' })
    .toString();
  return { privateKey, publicKeyPem, file };
}

/** A key for this process only (tests, or a hub with nowhere to keep one). */
export function ephemeralApprovalKey(): ApprovalKey {
  return fromPrivate(generateKeyPairSync('ed25519').privateKey, null);
}

/**
 * Reads the PKCS#8 PEM key at `file`, or makes one there (mode 0600; written whole, and only
 * if no other hub made one first: then that one is read).
 */
export function loadApprovalKey(file: string): ApprovalKey {
  let pem: string | null = null;
  try {
    pem = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new CtxbusError(
        'validation_failed',
        `cannot read the approval key ${file}: ${(error as Error).message}`,
      );
    }
  }
  if (pem !== null) {
    try {
      return fromPrivate(createPrivateKey(pem), file);
    } catch (error) {
      if (CtxbusError.isInstance(error)) throw error;
      throw new CtxbusError(
        'validation_failed',
        `${file}: not a PEM private key (${(error as Error).message})`,
      );
    }
  }
  const { privateKey } = generateKeyPairSync('ed25519');
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  try {
    linkSync(temporary, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return loadApprovalKey(file);
  } finally {
    unlinkSync(temporary);
  }
  return fromPrivate(privateKey, file);
}

/** A key file and the audit anchors kept beside it. */
export interface KeyPlace {
  key: string;
  anchors: string;
}

/** Moves a file or directory, copying across file systems (then removing the original). */
function move(from: string, to: string): void {
  try {
    renameSync(from, to);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
    cpSync(from, to, {
      recursive: true,
      errorOnExist: true,
      force: false,
      preserveTimestamps: true,
    });
    rmSync(from, { recursive: true });
  }
}

/**
 * Moves an approval key and its audit anchors from where an older hub kept them (`from`: in
 * the data directory) to `to` (a directory of keys only, 0700; the key 0600), so approvals
 * signed before still verify and the anchors keep their history. Each piece moves only when
 * it is not at `to` already; when both places hold one, nothing is moved and the answer says
 * so (the caller warns: the old file stays for a person to compare). Never makes a key.
 */
export function moveApprovalKey(from: KeyPlace, to: KeyPlace): string[] {
  const notes: string[] = [];
  mkdirSync(dirname(to.key), { recursive: true, mode: 0o700 });
  chmodSync(dirname(to.key), 0o700);
  for (const piece of ['key', 'anchors'] as const) {
    if (!existsSync(from[piece])) continue;
    if (existsSync(to[piece])) {
      notes.push(`${from[piece]} was left in place: ${to[piece]} exists already and is used`);
      continue;
    }
    move(from[piece], to[piece]);
    if (piece === 'key') chmodSync(to.key, 0o600);
    notes.push(`moved ${from[piece]} to ${to[piece]}`);
  }
  return notes;
}
