import type { CtxbusClient } from '@ctxbus/client';
import type { VerifyAuditResponse } from '@ctxbus/core/contract';
import { CtxbusError } from '@ctxbus/core/light';
import type { Command } from 'commander';
import { printJson, printLine } from '../output.js';
import { assertStoreExists, storeTarget, withOfflineStore } from '../store-target.js';

// `ctxbus audit verify|list`: a team's hash-chained audit log (routing decisions, task changes,
// executions, approvals) as a running hub keeps it. verify exits 1, naming the first bad
// record, when the chain was tampered with.

interface AuditOptions {
  team?: string;
  data?: string;
  store?: string;
  url?: string;
  token?: string;
  json?: boolean;
}

interface ListOptions extends AuditOptions {
  after?: string;
  limit?: string;
  all?: boolean;
}

/**
 * The client for a team's log: --token, else with --team an admin token (else the runtime
 * token, which may read only its own team), else the runtime token (its own team).
 */
async function auditClient(options: AuditOptions): Promise<CtxbusClient> {
  const [{ createClient }, { findAdminToken, hubUrl, runtimeToken }] = await Promise.all([
    import('@ctxbus/client'),
    import('../hub-target.js'),
  ]);
  const url = hubUrl(options.url);
  const token =
    options.token ??
    (options.team !== undefined ? findAdminToken(url, undefined) : null) ??
    runtimeToken(url, undefined);
  return createClient({ url, token });
}

/** Verification straight on the store, not through a hub (whose answer you may not trust). */
/** What anchors the chain outside the database, in one line (null: nothing to say). */
function anchorLine(anchor: VerifyAuditResponse['anchor']): string | null {
  if (anchor === undefined) return null;
  if (anchor === null) return 'not anchored: this hub keeps no signed checkpoints';
  const tampered =
    anchor.unsigned > 0 ? `; ${anchor.unsigned} checkpoint lines fail their signature` : '';
  if (anchor.checkpoint === null) return `no signed checkpoint of this team yet${tampered}`;
  const { seq, at, ageSeconds } = anchor.checkpoint;
  return `anchored: the hub signed record ${seq} at ${at} (${Math.round(ageSeconds)} s ago)${tampered}`;
}

async function verifyOffline(options: AuditOptions) {
  const team = options.team;
  if (team === undefined) {
    throw new CtxbusError('validation_failed', '--data and --store need --team');
  }
  if (options.url !== undefined || options.token !== undefined) {
    throw new CtxbusError(
      'validation_failed',
      '--url and --token go to a hub; --data and --store do not',
    );
  }
  const target = storeTarget({
    ...(options.data !== undefined && { data: options.data }),
    ...(options.store !== undefined && { store: options.store }),
  });
  // A mistyped --data is no empty log "intact, 0 records": it is said, and no store is made.
  assertStoreExists(target);
  return withOfflineStore(target, async (store) => ({ team, ...(await store.verifyAudit(team)) }));
}

function count(text: string | undefined, name: string, min: number): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min) {
    throw new CtxbusError('validation_failed', `${name} must be an integer >= ${min}`);
  }
  return value;
}

function withHubOptions(command: Command): Command {
  return command
    .option('--team <team>', "the team (admin token); default: the runtime token's own team")
    .option('--url <url>', 'hub URL (default: $CTXBUS_URL, else the hub saved by ctxbus serve)')
    .option(
      '--token <token>',
      'token (default with --team: $CTXBUS_ADMIN_TOKEN or the saved admin token; else $CTXBUS_TOKEN or the saved runtime token)',
    )
    .option('--json', "print the hub's answer as JSON");
}

export function registerAudit(
  program: Command,
  run: (action: () => Promise<void>) => Promise<void>,
) {
  const audit = program
    .command('audit')
    .description('the audit log: every routing decision, task change, execution and approval');

  withHubOptions(
    audit
      .command('verify')
      .description(
        "check a team's hash chain end to end; exit 1 naming the first record changed, removed or moved",
      )
      .option(
        '-d, --data <dir>',
        'check the embedded store in this data directory itself, no hub involved (with --team; the hub stopped)',
      )
      .option(
        '--store <url>',
        'check a PostgreSQL store itself, no hub involved (with --team; hubs may run)',
      ),
  ).action((options: AuditOptions) =>
    run(async () => {
      const outcome =
        options.data !== undefined || options.store !== undefined
          ? await verifyOffline(options)
          : await (await auditClient(options)).verifyAudit({
              ...(options.team !== undefined && { team: options.team }),
            });
      if (options.json) printJson(outcome);
      if (outcome.ok) {
        if (!options.json) {
          printLine(
            `audit log of team ${outcome.team}: intact, ${outcome.records} record${outcome.records === 1 ? '' : 's'}, head ${outcome.head}`,
          );
          const anchored = anchorLine((outcome as VerifyAuditResponse).anchor);
          if (anchored) printLine(anchored);
        }
        return;
      }
      // Not a CtxbusError: exit 1 (a failure), with the record and the reason on stderr.
      throw new Error(
        `audit log of team ${outcome.team} is broken at record ${outcome.seq}: ${outcome.reason}`,
      );
    }),
  );

  withHubOptions(
    audit
      .command('list')
      .description("print a team's audit records, oldest first (one line each)")
      .option('--after <seq>', 'records after this sequence')
      .option('--limit <n>', 'records per page (at most 1,000)', '100')
      .option('--all', 'every record from --after on, page after page'),
  ).action((options: ListOptions) =>
    run(async () => {
      const client = await auditClient(options);
      let after = count(options.after, '--after', 0) ?? 0;
      const limit = count(options.limit, '--limit', 1);
      // --all --json: one document with every page's records, not a document per page.
      const records: unknown[] = [];
      const from = after;
      let printed = 0;
      for (;;) {
        const page = await client.listAudit({
          ...(options.team !== undefined && { team: options.team }),
          after,
          ...(limit !== undefined && { limit }),
        });
        if (options.json && !options.all) printJson(page);
        else if (options.json) records.push(...page.records);
        else {
          for (const record of page.records) {
            printLine(
              `#${record.seq} ${record.at} ${record.kind} ${record.subject} by ${record.actor} ${JSON.stringify(record.data)}`,
            );
          }
          printed += page.records.length;
        }
        if (!options.all || page.nextAfter === null) {
          if (options.json && options.all) printJson({ records, nextAfter: null });
          // Said on stderr, so that stdout stays the records: none, or more than shown.
          if (!options.json && printed === 0) {
            process.stderr.write(`ctxbus: no audit records${from > 0 ? ` after #${from}` : ''}\n`);
          }
          if (!options.json && page.nextAfter !== null) {
            process.stderr.write(
              `ctxbus: more records: --after ${page.nextAfter} for the next page, or --all\n`,
            );
          }
          return;
        }
        after = page.nextAfter;
      }
    }),
  );
}
