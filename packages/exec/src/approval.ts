import {
  createHash,
  createPrivateKey,
  createPublicKey,
  type KeyObject,
  sign,
  verify,
} from 'node:crypto';
import { realpathSync, statSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { CtxbusError, canonicalJson, commandDigest } from '@ctxbus/core/light';
import { z } from 'zod';
import { boundedFileHash, MAX_SCRIPT_BYTES } from './bounded-hash.js';
import { programName } from './command-policy.js';
import { projectTreeHash } from './project-tree.js';

// Approvals bound to the exact command: a human approves argv, cwd and the hash of the script
// the command runs, once. The hub signs the approval with Ed25519; the worker verifies it by
// recomputing the digest NOW (re-hashing the script, so an edited script voids it).

/** How long an approval lasts unless the hub says otherwise. */
export const DEFAULT_APPROVAL_LIFETIME_MS = 30 * 60 * 1000;

// The digest an approval is bound to is core's (the hub, this worker and a runtime's permission
// hook compute it one way).
export type { CommandIdentity } from '@ctxbus/core/light';
export { commandDigest } from '@ctxbus/core/light';

/** Programs whose first file argument is the script they run. */
const INTERPRETERS = new Set([
  'node',
  'nodejs',
  'python',
  'bash',
  'sh',
  'zsh',
  'dash',
  'ksh',
  'mksh',
  'ash',
  'fish',
  'csh',
  'tcsh',
  'perl',
  'ruby',
  'php',
  'lua',
  'luajit',
  'rscript',
  'deno',
  'bun',
  'tsx',
  'ts-node',
  'pwsh',
  'powershell',
]);

/** Package managers whose scripts live in package.json. */
const PACKAGE_MANAGERS = new Set(['npm', 'pnpm', 'yarn', 'bun']);

/**
 * Tools that run the project's own code and configuration (its tests, its build): besides the
 * package managers and interpreters, these. An approval of one is bound to the working tree.
 */
const PROJECT_TOOLS = new Set([
  'npx',
  'make',
  'gmake',
  'cmake',
  'ninja',
  'just',
  'task',
  'turbo',
  'nx',
  'tsc',
  'tsx',
  'vitest',
  'jest',
  'mocha',
  'playwright',
  'pytest',
  'tox',
  'nox',
  'uv',
  'poetry',
  'pipenv',
  'cargo',
  'go',
  'mvn',
  'gradle',
  'gradlew',
  'dotnet',
  'rake',
  'bundle',
  'composer',
  'mix',
  'deno',
]);

/**
 * Whether the command runs the project's code (so what it reads is the whole working tree,
 * not only the file argv names): a package manager, an interpreter, a project tool, or a
 * program inside the working directory.
 */
function readsProject(argv: readonly string[], cwd: string): boolean {
  const program = argv[0] ?? '';
  const name = programName(program);
  if (PACKAGE_MANAGERS.has(name) || INTERPRETERS.has(name) || PROJECT_TOOLS.has(name)) return true;
  return program.includes('/') && !isAbsolute(program) && regularFile(inDirectory(cwd, program));
}

/**
 * `word` as the kernel finds it from `cwd`: not path.resolve, which would drop `lnk/..` as
 * text where the kernel follows lnk first (and so hash another file than the one run).
 */
function inDirectory(cwd: string, word: string): string {
  return isAbsolute(word) ? word : `${cwd}/${word}`;
}

/** Whether `path` is a directory that is not `cwd` or inside it (by real paths). */
function outsideDirectory(cwd: string, path: string): boolean {
  try {
    if (!statSync(path).isDirectory()) return false;
    const real = realpathSync.native(path);
    const base = realpathSync.native(cwd);
    return real !== base && !real.startsWith(`${base}/`);
  } catch {
    return false;
  }
}

function regularFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** One file's hash, within the script budget. */
function fileHash(path: string): Promise<string> {
  return boundedFileHash(path, { left: MAX_SCRIPT_BYTES, what: 'a script' }, MAX_SCRIPT_BYTES);
}

/**
 * SHA-256 of what a command runs that its approver cannot see, or null when it runs none:
 * argv[0] when it is a path to a file; for an interpreter (node, python, bash, sh, ... see
 * INTERPRETERS), every argument that names an existing file (the script, and modules such as
 * `node -r ./x.js`); for npm, pnpm, yarn, bun and `node --run`, the working directory's
 * package.json (where their scripts are); and for a command that runs the project's code
 * (`readsProject`: a package manager, an interpreter, a project tool such as make, pytest or
 * cargo, or a program in the directory), the working tree (`projectTreeHash`: tracked and
 * untracked files, and config files such as `.npmrc`, `.env`, `Makefile` even when ignored).
 * One file: its hash; several: the hash of the canonical list of [argument, hash]. A file
 * over MAX_SCRIPT_BYTES, or a tree over MAX_TREE_BYTES, throws HashBudgetExceeded.
 */
export async function scriptHashFor(argv: readonly string[], cwd: string): Promise<string | null> {
  const program = argv[0];
  if (program === undefined) return null;
  const at = (word: string) => inDirectory(cwd, word);
  const files: [string, string][] = [];
  if (program.includes('/') && regularFile(at(program))) {
    files.push([program, await fileHash(at(program))]);
  }
  const name = programName(program);
  if (INTERPRETERS.has(name)) {
    for (const word of argv.slice(1)) {
      if (word.startsWith('-') || word === '') continue;
      const value = word.includes('=') && !regularFile(at(word)) ? word.split('=').at(-1) : word;
      if (value && regularFile(at(value))) files.push([word, await fileHash(at(value))]);
      // A directory runs what is in it (python's __main__.py, node's index.js or package.json
      // main): its tree, when the working tree's hash does not cover it already.
      else if (value && outsideDirectory(cwd, at(value))) {
        files.push([word, await projectTreeHash(at(value))]);
      }
    }
  }
  const runsScript = PACKAGE_MANAGERS.has(name) || (name === 'node' && argv.includes('--run'));
  if (runsScript && regularFile(join(cwd, 'package.json'))) {
    files.push(['package.json', await fileHash(join(cwd, 'package.json'))]);
  }
  if (readsProject(argv, cwd)) files.push(['<working tree>', await projectTreeHash(cwd)]);
  if (files.length === 0) return null;
  if (files.length === 1) return (files[0] as [string, string])[1];
  return createHash('sha256').update(canonicalJson(files)).digest('hex');
}

const approvalPayloadSchema = z.strictObject({
  v: z.literal(1),
  taskId: z.string().min(1).max(200),
  digest: z.string().regex(/^[0-9a-f]{64}$/),
  approvedBy: z.string().min(1).max(200),
  /** Epoch milliseconds. */
  issuedAt: z.number().int().nonnegative(),
  expiresAt: z.number().int().nonnegative(),
});

export type ApprovalPayload = z.output<typeof approvalPayloadSchema>;

export interface ApprovalInput {
  taskId: string;
  digest: string;
  approvedBy: string;
  /** Epoch milliseconds (default: now + 30 min). */
  expiresAt?: number;
}

type KeyInput = KeyObject | string;

function privateKeyOf(key: KeyInput): KeyObject {
  return typeof key === 'string' ? createPrivateKey(key) : key;
}

function publicKeyOf(key: KeyInput): KeyObject {
  return typeof key === 'string' ? createPublicKey(key) : key;
}

/**
 * Signs an approval (the hub's side) with an Ed25519 private key (a KeyObject or PEM).
 * The token is `base64url(payload JSON).base64url(signature)`.
 */
export function signApproval(
  privateKey: KeyInput,
  input: ApprovalInput,
  now: number = Date.now(),
): string {
  const payload: ApprovalPayload = approvalPayloadSchema.parse({
    v: 1,
    taskId: input.taskId,
    digest: input.digest,
    approvedBy: input.approvedBy,
    issuedAt: now,
    expiresAt: input.expiresAt ?? now + DEFAULT_APPROVAL_LIFETIME_MS,
  });
  const body = Buffer.from(canonicalJson(payload)).toString('base64url');
  const signature = sign(null, Buffer.from(body), privateKeyOf(privateKey)).toString('base64url');
  return `${body}.${signature}`;
}

export type ApprovalCheck =
  | { valid: true; approval: ApprovalPayload; digest: string }
  | { valid: false; code: 'approval_invalid'; reason: string };

/**
 * Verifies an approval token for a task's command (the worker's side): the signature by the
 * hub's Ed25519 public key, the task, the expiry, and the digest of argv, cwd and the files it
 * runs as they are now (`scriptHash`: scriptHashFor's answer, taken just before).
 */
export function verifyApproval(
  publicKey: KeyInput,
  token: string,
  command: { taskId: string; argv: readonly string[]; cwd: string; scriptHash: string | null },
  now: number = Date.now(),
): ApprovalCheck {
  const refuse = (reason: string): ApprovalCheck => ({
    valid: false,
    code: 'approval_invalid',
    reason,
  });
  const [body, signature, extra] = token.split('.');
  if (!body || !signature || extra !== undefined) return refuse('the approval is malformed');
  let key: KeyObject;
  try {
    key = publicKeyOf(publicKey);
  } catch (cause) {
    throw new CtxbusError('validation_failed', 'the hub approval key is not a public key', {
      cause,
    });
  }
  let signed = false;
  try {
    signed = verify(null, Buffer.from(body), key, Buffer.from(signature, 'base64url'));
  } catch {
    signed = false;
  }
  if (!signed) return refuse('the approval is not signed by the hub');
  let payload: ApprovalPayload;
  try {
    const parsed = approvalPayloadSchema.safeParse(
      JSON.parse(Buffer.from(body, 'base64url').toString('utf8')),
    );
    if (!parsed.success) return refuse('the approval is malformed');
    payload = parsed.data;
  } catch {
    return refuse('the approval is malformed');
  }
  if (payload.taskId !== command.taskId) {
    return refuse(`the approval is for task ${payload.taskId}, not ${command.taskId}`);
  }
  if (now >= payload.expiresAt) {
    return refuse(`the approval expired at ${new Date(payload.expiresAt).toISOString()}`);
  }
  const digest = commandDigest({
    argv: command.argv,
    cwd: command.cwd,
    scriptHash: command.scriptHash,
  });
  if (digest !== payload.digest) {
    return refuse(
      'the approval is for a different command or directory, or the files it runs changed since (the script, or the working tree of a project command)',
    );
  }
  return { valid: true, approval: payload, digest };
}
