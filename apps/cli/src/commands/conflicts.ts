import { createInterface } from 'node:readline/promises';
import { createClient } from '@ctxbus/client';
import type { ConflictView } from '@ctxbus/core/contract';
import { itemIdSchema } from '@ctxbus/core/contract';
import { CtxbusError } from '@ctxbus/core/light';
import { hubCredentials } from '../credentials.js';
import { findAdminToken, hubUrl } from '../hub-target.js';

// `ctxbus conflicts`: the hub client side, loaded when a conflicts command runs.

export interface Connection {
  url?: string;
  token?: string;
  adminToken?: string;
  team?: string;
  json?: boolean;
}

/**
 * --token, else (to resolve) $CTXBUS_APPROVER_TOKEN, else $CTXBUS_TOKEN or the saved runtime
 * token, else the admin token with --team.
 */
export function connect(options: Connection, deciding: boolean) {
  const url = hubUrl(options.url);
  const runtime =
    options.token ||
    (deciding ? process.env.CTXBUS_APPROVER_TOKEN : undefined) ||
    (options.adminToken ? undefined : process.env.CTXBUS_TOKEN || hubCredentials(url).token);
  if (runtime) return { client: createClient({ url, token: runtime }), team: undefined };
  const admin = findAdminToken(url, options.adminToken);
  if (!deciding || !admin) {
    throw new CtxbusError(
      'validation_failed',
      `no runtime token for ${url}: pass --token${deciding ? ' (or --admin-token with --team)' : ''}`,
    );
  }
  if (!options.team) {
    throw new CtxbusError('validation_failed', 'with an admin token, name the team: --team TEAM');
  }
  return { client: createClient({ url, token: admin }), team: options.team };
}

export function conflictLines(conflict: ConflictView): string[] {
  const [older, newer] = conflict.values;
  const head = `${conflict.id}  ${conflict.status.padEnd(8)} ${conflict.key}  (${conflict.raisedAt})`;
  const kept = conflict.resolution?.keep;
  const mark = (id: string, holds: boolean) =>
    kept === id ? '  [kept]' : kept === undefined && holds ? '  [holds the key]' : '';
  return [
    head,
    `  1. ${older.id}  ${older.runtime}: ${older.title}${mark(older.id, false)}`,
    `  2. ${newer.id}  ${newer.runtime}: ${newer.title}${mark(newer.id, true)}`,
    ...(conflict.resolution
      ? [`  resolved by ${conflict.resolution.by} at ${conflict.resolution.at}`]
      : []),
  ];
}

/** Characters of the kept item's id (its end: ids begin alike) a person types to keep it. */
export const KEEP_CHARS = 6;

/**
 * Shows the conflict and the value to keep, and asks the person at the terminal to type the
 * last KEEP_CHARS characters of its id; anything else keeps nothing.
 */
export async function confirmKeep(
  conflictId: string,
  conflict: ConflictView | undefined,
  keep: string,
): Promise<void> {
  // What the hub would refuse is said before a person is asked anything.
  for (const [name, value] of [
    ['the conflict id', conflictId],
    ['--keep', keep],
  ] as const) {
    if (!itemIdSchema.safeParse(value).success) {
      throw new CtxbusError('validation_failed', `${name} must be an item id (a UUID): "${value}"`);
    }
  }
  if (conflict?.status === 'resolved') {
    throw new CtxbusError(
      'conflict',
      `conflict ${conflictId} is already resolved (${conflict.resolution?.by ?? 'someone'} kept ${conflict.resolution?.keep ?? 'a value'})`,
    );
  }
  const value = conflict?.values.find((entry) => entry.id === keep);
  const text = [
    ...(conflict
      ? conflictLines(conflict)
      : [`${conflictId}  (not among the latest conflicts read)`]),
    '',
    value
      ? `Keep ${value.runtime}'s value "${value.title}" (item ${keep}) for ${conflict?.key}?`
      : `Keep item ${keep}? (not one of the values shown: the hub refuses what is not)`,
    `Type the last ${KEEP_CHARS} characters of its id (anything else cancels): `,
  ].join('\n');
  const prompt = createInterface({ input: process.stdin, output: process.stdout, terminal: true });
  let answer: string;
  try {
    answer = await prompt.question(text);
  } finally {
    prompt.close();
  }
  if (answer.trim().toLowerCase() !== keep.slice(-KEEP_CHARS).toLowerCase()) {
    throw new CtxbusError(
      'validation_failed',
      `not resolved: "${answer.trim()}" is not the last ${KEEP_CHARS} characters of ${keep}`,
    );
  }
}
