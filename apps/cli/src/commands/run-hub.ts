import { createHash } from 'node:crypto';
import { fstatSync, realpathSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { CapabilitiesStatus } from '@ctxbus/core/contract';
import type { KeyPlace, RetentionOptions, RunningHub, WebhookOptions } from '@ctxbus/hub';
import {
  loadApprovalKey,
  mintToken,
  moveApprovalKey,
  openAiEmbeddings,
  startHub,
} from '@ctxbus/hub';
import type { Store } from '@ctxbus/store';
import { openSqliteStore } from '@ctxbus/store';
import type { DestinationStream } from 'pino';
import { pino } from 'pino';
import {
  configDir,
  credentialsPath,
  hubKey,
  readCredentials,
  saveHubCredentials,
} from '../credentials.js';
import { databasePath, lockDataDir } from '../data-dir.js';
import { printLine } from '../output.js';
import { npxCacheDir } from '../runtime-files.js';
import type { StoreTarget } from '../store-target.js';
import { describeTarget } from '../store-target.js';
import { VERSION } from '../version.js';
import { dashboardExtension } from './dashboard-extension.js';
import type { McpLimits } from './mcp-extension.js';
import { mcpExtension } from './mcp-extension.js';

/** Serve options after validation, as the hub worker receives them. */
export interface HubRunOptions {
  port: number;
  host: string;
  /** The hub's public base URL (its A2A Agent Cards name it); null: loopback requests only. */
  publicUrl: string | null;
  /** Browser origins allowed to call the API cross-origin (CORS); empty: none. */
  corsOrigins: string[];
  store: StoreTarget;
  /** The capabilities file to load and watch (null: an empty matrix). */
  capabilities: { file: string; optional: boolean } | null;
  /** PostgreSQL: apply pending migrations on start (SQLite always does). */
  migrate: boolean;
  logLevel: string;
  maxBodyBytes: number;
  maxStreamPendingBytes: number;
  maxStreamsPerToken: number;
  maxStreamsPerTeam: number;
  durability: 'normal' | 'full';
  json: boolean;
  validateResponses: boolean;
  webhooks: WebhookOptions;
  mcp: McpLimits;
  retention: RetentionOptions;
  /** How long an approval request waits for a human, and a signed approval lasts. */
  approvalTtlMs: number;
  /** --conflict-window ($CTXBUS_CONFLICT_WINDOW): 0 raises no conflicts. */
  conflictWindowMs: number;
  /** --approval-key ($CTXBUS_APPROVAL_KEY): the signing key's file (null: the default place). */
  approvalKey?: string | null;
  /** Memory per embedding model for the exact vector scan in the hub (MB). */
  vectorMemoryMb: number;
  /** An OpenAI-compatible embeddings API for hybrid search (null: full text only). */
  embeddings: {
    url: string;
    model: string;
    apiKey?: string;
    dimensions?: number;
    embedItems: boolean;
  } | null;
}

function embeddingsOptions(settings: NonNullable<HubRunOptions['embeddings']>) {
  const { embedItems, ...provider } = settings;
  return { provider: openAiEmbeddings(provider), embedItems };
}

/** One line on where the capability matrix comes from, for the start banner. */
function capabilitiesLine(status: CapabilitiesStatus): string {
  if (status.file === null) return 'none (empty matrix; give --capabilities FILE)';
  if (status.error) return `${status.error.message} (empty matrix until it parses)`;
  if (status.status === 'empty')
    return `none yet (empty matrix; ${status.file} is loaded when it appears)`;
  return `${status.file}, ${status.runtimes} runtime${status.runtimes === 1 ? '' : 's'} (reloaded on change)`;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

function keyPlace(directory: string): KeyPlace {
  return { key: join(directory, 'approval-key.pem'), anchors: join(directory, 'audit-anchors') };
}

/** A PostgreSQL store as a directory name: its database and schema, and a hash of where. */
function postgresStoreName(target: Extract<StoreTarget, { kind: 'postgres' }>): string {
  const url = new URL(target.connectionString);
  const database = decodeURIComponent(url.pathname.replace(/^\//, '')) || 'postgres';
  const schema = target.schema ?? 'ctxbus';
  const where = `${url.hostname}:${url.port || '5432'}/${database}?schema=${schema}`;
  const hash = createHash('sha256').update(where).digest('hex').slice(0, 12);
  return `${database}-${schema}-${hash}`.replace(/[^\w.-]/g, '_');
}

/**
 * Where the approval signing key and the audit anchors live: `file` (--approval-key or
 * $CTXBUS_APPROVAL_KEY; anchors beside it), else a directory of keys only in the config directory, never in the data tree
 * (hardening 4): `<config>/keys/sqlite-<data dir's name>-<hash of its path>/` for the embedded
 * store (one per data directory, as before), `<config>/keys/postgres/` for PostgreSQL (its
 * anchors under `audit-anchors/<database>-<schema>-<hash>/`, one directory per store). The
 * config directory already holds the credentials (admin tokens), the same kind of secret, and
 * is hidden from sandboxed tasks with the data directory; a data directory can be copied,
 * backed up or bound into a sandbox without the key. `legacy` is where older hubs kept them.
 */
export function approvalKeyPlaces(
  target: StoreTarget,
  file: string | null = null,
  env: NodeJS.ProcessEnv = process.env,
): { place: KeyPlace; legacy: KeyPlace | null } {
  const key = file || env.CTXBUS_APPROVAL_KEY;
  if (key) {
    return { place: { key, anchors: join(dirname(key), 'audit-anchors') }, legacy: null };
  }
  const keys = join(configDir(env), 'keys');
  if (target.kind !== 'sqlite') {
    // One key for the machine's PostgreSQL hubs; anchors per database and schema, since each
    // store's chains are its own (one file per team for all of them made a fresh database's
    // chain look cut at another's sequence).
    const shared = keyPlace(join(keys, 'postgres'));
    return {
      place: { ...shared, anchors: join(shared.anchors, postgresStoreName(target)) },
      legacy: keyPlace(configDir(env)),
    };
  }
  let path = target.dataDir;
  try {
    path = realpathSync(path);
  } catch {
    // Not there yet: its path as given.
  }
  const hash = createHash('sha256').update(path).digest('hex').slice(0, 12);
  const name = basename(path).replace(/[^\w.-]/g, '_');
  return {
    place: keyPlace(join(keys, `sqlite-${name}-${hash}`)),
    legacy: keyPlace(target.dataDir),
  };
}

/** The hub's JSON log at `level`, written to `destination` (stderr, fd 2, for `serve`). */
export function hubLogger(level: string, destination: DestinationStream = pino.destination(2)) {
  return pino({ level, base: { service: 'ctxbus-hub' } }, destination);
}

type HubLogger = ReturnType<typeof hubLogger>;

/** A hub as `serve` starts it, listening; `close` stops it and releases its store. */
export interface ServedHub {
  running: RunningHub;
  /** The first admin token, minted when the store had none. */
  adminToken: string | null;
  /** The credentials file that now holds the admin token (null: not saved). */
  savedIn: string | null;
  /** Where the approval signing key is. */
  approvalKey: string;
  close(): Promise<void>;
}

/**
 * Starts the hub as `serve` does: takes the data directory (or connects to PostgreSQL), opens
 * the store, mints the first admin token when there is none, listens, and saves the admin
 * token for this user's CLI. `env` names the config directory (credentials, signing key).
 */
export async function startServedHub(
  options: HubRunOptions,
  logger: HubLogger,
  env: NodeJS.ProcessEnv = process.env,
): Promise<ServedHub> {
  const target = options.store;
  // One hub per data directory; any number of hubs may share a PostgreSQL database.
  const lock = target.kind === 'sqlite' ? lockDataDir(target.dataDir) : null;
  let store: Store;
  try {
    store =
      target.kind === 'sqlite'
        ? openSqliteStore({
            path: databasePath(target.dataDir),
            durability: options.durability,
            vectorMemoryMb: options.vectorMemoryMb,
          })
        : await (await import('@ctxbus/store/postgres')).openPostgresStore({
            connectionString: target.connectionString,
            migrate: options.migrate,
            vectorMemoryMb: options.vectorMemoryMb,
            logger: logger.child({ component: 'postgres' }),
            ...(target.schema && { schema: target.schema }),
          });
  } catch (error) {
    lock?.release();
    throw error;
  }
  const release = async () => {
    try {
      await store.close();
    } finally {
      lock?.release();
    }
  };
  try {
    if (!LOOPBACK.has(options.host)) {
      logger.warn(
        { host: options.host },
        'the hub listens beyond loopback: anyone who can reach it and holds a token can use it',
      );
    }
    const { place, legacy } = approvalKeyPlaces(target, options.approvalKey ?? null, env);
    // A key an older hub kept in the data directory moves (approvals it signed still verify).
    for (const note of legacy ? moveApprovalKey(legacy, place) : []) {
      logger.warn({ key: place.key }, `approval key: ${note}`);
    }
    const running = await startHub({
      store,
      logger,
      host: options.host,
      port: options.port,
      version: VERSION,
      maxBodyBytes: options.maxBodyBytes,
      maxStreamPendingBytes: options.maxStreamPendingBytes,
      maxStreamsPerToken: options.maxStreamsPerToken,
      maxStreamsPerTeam: options.maxStreamsPerTeam,
      validateResponses: options.validateResponses,
      // The embedded store has one hub at a time (the data-directory lock), so a fixed lease
      // holder lets a restarted hub resume webhook delivery at once.
      retention: options.retention,
      webhooks:
        target.kind === 'sqlite'
          ? { ...options.webhooks, leaseHolder: 'embedded-hub' }
          : options.webhooks,
      ...(options.capabilities && { capabilities: options.capabilities }),
      ...(options.publicUrl !== null && { publicUrl: options.publicUrl }),
      corsOrigins: options.corsOrigins,
      // Approvals are signed with a key kept in a directory of keys, outside the data tree;
      // hubs sharing a database must share it: $CTXBUS_APPROVAL_KEY names the file.
      approvalTtlMs: options.approvalTtlMs,
      conflictWindowMs: options.conflictWindowMs,
      approvalKey: loadApprovalKey(place.key),
      // Signed checkpoints of the audit chains, beside the key, outside the database.
      auditAnchorDir: place.anchors,
      extensions: [
        mcpExtension({
          host: options.host,
          publicUrl: options.publicUrl,
          corsOrigins: options.corsOrigins,
          logger,
          limits: options.mcp,
        }),
        dashboardExtension({ logger }),
      ],
      ...(options.embeddings && { embeddings: embeddingsOptions(options.embeddings) }),
    });
    lock?.update({ url: running.url, startedAt: new Date().toISOString() });
    // Minted once the hub listens: a start that fails (its port taken) must not leave behind an
    // admin token nobody was shown, which the next start would take as already handed out.
    let adminToken: string | null = null;
    const admins = (await store.listTokens()).filter((token) => token.role === 'admin');
    if (admins.length === 0) {
      adminToken = (
        await mintToken(store, { role: 'admin', teamId: null, runtime: null, label: 'first start' })
      ).token;
    }
    // A new hub on this machine: keep its admin token where this user's CLI finds it, so no
    // token is copied by hand (a hub reached from elsewhere gets its tokens passed explicitly).
    let savedIn: string | null = null;
    if (adminToken && LOOPBACK.has(options.host)) {
      try {
        savedIn = saveHubCredentials(running.url, { adminToken }, { path: credentialsPath(env) });
      } catch (error) {
        logger.warn({ err: error }, 'could not save the admin token in the credentials file');
      }
    }
    logger.info(
      { url: running.url, store: describeTarget(target), approvalKey: place.key },
      'hub listening',
    );
    return {
      running,
      adminToken,
      savedIn,
      approvalKey: place.key,
      async close() {
        try {
          await running.close();
        } finally {
          await release();
        }
      },
    };
  } catch (error) {
    await release();
    throw error;
  }
}

/** Runs the hub until `stopped` resolves: starts it, prints the URL, then closes everything. */
export async function runHub(options: HubRunOptions, stopped: Promise<string>): Promise<void> {
  const logger = hubLogger(options.logLevel);
  const served = await startServedHub(options, logger);
  try {
    printStart(options, served);
    const signal = await stopped;
    logger.info({ signal }, 'shutting down');
  } finally {
    await served.close();
  }
}

/** What `serve` prints once the hub listens: one JSON line (--json), or lines for a person. */
function printStart(options: HubRunOptions, served: ServedHub): void {
  const { running, adminToken, savedIn } = served;
  const target = options.store;
  const where = describeTarget(target);
  if (options.json) {
    printLine(
      JSON.stringify({
        url: running.url,
        adminToken,
        ...(savedIn && { credentials: savedIn }),
        store: where,
        ...(target.kind === 'sqlite' && { dataDir: target.dataDir }),
        approvalKey: served.approvalKey,
        capabilities: running.hub.services.capabilities.status(),
        version: VERSION,
      }),
    );
    return;
  }
  printLine(`ctxbus ${VERSION} hub listening on ${running.url}`);
  printLine(`store: ${where}`);
  printLine(`approval signing key: ${served.approvalKey}`);
  printLine(`MCP (Streamable HTTP): ${running.url}/mcp`);
  printLine(`capabilities: ${capabilitiesLine(running.hub.services.capabilities.status())}`);
  if (options.embeddings) {
    printLine(
      `search: hybrid, embeddings by ${options.embeddings.model} at ${new URL(options.embeddings.url).origin} (vectors: ${running.hub.services.store.info.vectorIndex})`,
    );
  }
  if (!adminToken) return;
  // Under systemd a saved token stays out of the journal, which keeps what it is given.
  if (savedIn && stdoutIsJournal()) {
    printLine(`admin token: not printed here (this output goes to the journal)`);
  } else printLine(`admin token (shown once, keep it safe): ${adminToken}`);
  if (savedIn) {
    printLine(`saved in ${savedIn} (0600): the ctxbus CLI of this user uses it for this hub`);
    // A second hub is not the saved default: a bare `ctxbus connect` would go to the first.
    const isDefault = readCredentials(savedIn).defaultHub === hubKey(running.url);
    const connect = isDefault ? 'ctxbus connect' : `ctxbus connect --url ${running.url}`;
    printLine(
      npxCacheDir() === null
        ? `next: ${connect} (wires every runtime found here), or ctxbus token create --runtime <runtime> [--save]`
        : `next: npm install -g ctxbus (this one runs from npx's cache), then ${connect} (wires every runtime found here)`,
    );
  } else {
    printLine(
      `next: ctxbus token create --url ${running.url} --admin-token <admin token> --team <team> --runtime claude-code`,
    );
  }
  printLine(
    `lost it? mint another offline: ctxbus token create --admin ${target.kind === 'sqlite' ? `--data ${target.dataDir} (with the hub stopped)` : '--store <the same store URL>'}`,
  );
}

/**
 * Whether stdout is the journal: systemd sets JOURNAL_STREAM to its device:inode when it
 * connects a service's output to the journal (systemd.exec(5)).
 */
function stdoutIsJournal(): boolean {
  const stream = process.env.JOURNAL_STREAM;
  if (!stream) return false;
  try {
    const { dev, ino } = fstatSync(1);
    return stream === `${dev}:${ino}`;
  } catch {
    return false;
  }
}
