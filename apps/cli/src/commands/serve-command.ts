import {
  DEFAULT_HUB_HOST,
  DEFAULT_HUB_PORT,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_MAX_STREAM_PENDING_BYTES,
  DEFAULT_MAX_STREAMS_PER_TEAM,
  DEFAULT_MAX_STREAMS_PER_TOKEN,
} from '@ctxbus/core/light';
import type { Command } from 'commander';
import { defaultDataDir } from '../data-dir.js';
import type { ServeOptions } from './serve.js';

/**
 * `serve` options whose value is a path: `ctxbus service install` makes them absolute, since
 * systemd starts the hub in another directory. Add a new path option here.
 */
export const SERVE_PATH_OPTIONS: readonly string[] = ['data', 'capabilities'];

/**
 * Environment variables `serve` reads for its defaults (besides CTXBUS_PORT, CTXBUS_HOST,
 * CTXBUS_DATA and CTXBUS_STORE, which `service install` turns into options): the service unit
 * keeps those set when it is written. Secrets (CTXBUS_EMBEDDINGS_KEY) are not written there.
 */
export const SERVE_ENVIRONMENT: readonly string[] = [
  'CTXBUS_CAPABILITIES',
  'CTXBUS_RETENTION_MODE',
  'CTXBUS_RETAIN',
  'CTXBUS_EMBEDDINGS_URL',
  'CTXBUS_EMBEDDINGS_MODEL',
  'CTXBUS_ALLOW_PRIVATE_WEBHOOKS',
];

export function registerServe(
  program: Command,
  run: (action: () => Promise<void>) => Promise<void>,
) {
  addServeOptions(
    program
      .command('serve')
      .description(
        'start a hub on the embedded store or PostgreSQL (prints its URL, and an admin token on first start)',
      ),
  ).action((options: ServeOptions) =>
    run(async () => {
      const { serve } = await import('./serve.js');
      await serve(options);
    }),
  );
}

/**
 * Every `serve` option, on `command` (also how `service install` and the in-process hub read
 * the same options), with defaults from `env`.
 */
export function addServeOptions(command: Command, env: NodeJS.ProcessEnv = process.env): Command {
  return command
    .option(
      '-p, --port <port>',
      'port to listen on (0 = any free port)',
      env.CTXBUS_PORT ?? String(DEFAULT_HUB_PORT),
    )
    .option(
      '--host <host>',
      'address to bind (loopback by default)',
      env.CTXBUS_HOST ?? DEFAULT_HUB_HOST,
    )
    .option(
      '--public-url <url>',
      "the hub's URL as others reach it, named in its A2A Agent Cards; its host is one the MCP endpoint answers to (default: $CTXBUS_PUBLIC_URL; without it cards are served, and /mcp answers, only to requests to a loopback name or the --host address)",
      env.CTXBUS_PUBLIC_URL,
    )
    .option(
      '--cors-origin <origin>',
      'a browser origin (https://app.example.com) whose pages may call the API cross-origin (repeatable; default: $CTXBUS_CORS_ORIGINS, comma-separated; none: only the dashboard the hub serves)',
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option('-d, --data <dir>', `data directory (default: $CTXBUS_DATA or ${defaultDataDir()})`)
    .option(
      '--store <url>',
      'PostgreSQL instead of the data directory: postgres://user@host:5432/db[?schema=name] (default: $CTXBUS_STORE); several hubs may share it',
    )
    .option(
      '--capabilities <file>',
      'capabilities.yaml to load, and reload whenever it changes (default: $CTXBUS_CAPABILITIES, else capabilities.yaml in the data directory if it exists or appears; with --store, none); a bad edit keeps the last good matrix and shows why in /health',
    )
    .option('--no-migrate', 'PostgreSQL: refuse to start on an old schema instead of migrating it')
    .option(
      '--log-level <level>',
      'trace|debug|info|warn|error|silent (logs go to stderr as JSON)',
      'info',
    )
    .option('--max-body-bytes <n>', 'largest accepted request body', String(DEFAULT_MAX_BODY_BYTES))
    .option(
      '--max-stream-pending-bytes <n>',
      'undelivered changes one live stream (SSE or WebSocket) may hold before the hub ends it as a slow reader; it resumes by Last-Event-ID without loss',
      String(DEFAULT_MAX_STREAM_PENDING_BYTES),
    )
    .option(
      '--max-streams-per-token <n>',
      'live streams (SSE or WebSocket) one token may hold open; a new one past it is refused with 429',
      String(DEFAULT_MAX_STREAMS_PER_TOKEN),
    )
    .option(
      '--max-streams-per-team <n>',
      'live streams the tokens of one team may hold open together; a new one past it is refused with 429',
      String(DEFAULT_MAX_STREAMS_PER_TEAM),
    )
    .option(
      '--durability <mode>',
      'embedded store: normal (survives crashes) or full (also power loss; slower)',
      'normal',
    )
    .option(
      '--allow-private-webhooks',
      'let push subscriptions target private, loopback and link-local addresses (trusted networks only)',
      env.CTXBUS_ALLOW_PRIVATE_WEBHOOKS === '1',
    )
    .option('--webhook-attempts <n>', 'attempts per change before it is dead-lettered', '8')
    .option(
      '--webhook-backoff-ms <ms>',
      'first retry delay, doubled after each failure (capped at 5 minutes)',
      '1000',
    )
    .option(
      '--mcp-max-sessions-per-token <n>',
      "MCP sessions one token may hold at /mcp: at its limit a new one closes that token's least recently used idle session, or is refused with 429 when none is idle",
      '32',
    )
    .option(
      '--mcp-max-sessions-per-team <n>',
      "MCP sessions the tokens of one team may hold together at /mcp (so one team's tokens cannot fill the endpoint): a new one past it is refused with 429",
      '128',
    )
    .option(
      '--mcp-max-sessions <n>',
      'MCP sessions open at once at /mcp, a memory bound: a new session past it is refused with 503',
      '1000',
    )
    .option(
      '--retention-mode <mode>',
      'what the lifecycle sweep does with expired and aged items: delete, or archive (kept, readable at /api/archive)',
      env.CTXBUS_RETENTION_MODE ?? 'delete',
    )
    .option(
      '--retain <limits>',
      'age limits by type, e.g. status=30d,alert=30d,discovery=90d (default off: only expired items are swept; current decisions and keyed items are kept until superseded)',
      env.CTXBUS_RETAIN ?? 'off',
    )
    .option('--sweep-interval <duration>', 'time between lifecycle sweeps', '60s')
    .option(
      '--approval-ttl <duration>',
      'how long a command waits for a human to approve it (unanswered: denied), and how long an approval lasts',
      '30m',
    )
    .option(
      '--conflict-window <duration>',
      'two runtimes writing different values on one key this close together raise a conflict for a person to resolve (ctxbus conflicts); off (or 0s): never (default: $CTXBUS_CONFLICT_WINDOW, else 10m)',
    )
    .option(
      '--approval-key <file>',
      "the Ed25519 key that signs approvals and audit checkpoints (the checkpoints go beside it; hubs sharing a PostgreSQL database share it) (default: $CTXBUS_APPROVAL_KEY, else a directory of keys in the config directory: see 'Where the signing key lives' in docs/tasks.md)",
      env.CTXBUS_APPROVAL_KEY,
    )
    .option(
      '--embeddings-url <url>',
      'hybrid search: an OpenAI-compatible embeddings API, e.g. https://api.openai.com/v1 (default: $CTXBUS_EMBEDDINGS_URL; the key comes from $CTXBUS_EMBEDDINGS_KEY)',
      env.CTXBUS_EMBEDDINGS_URL,
    )
    .option(
      '--embeddings-model <name>',
      'the embedding model, e.g. text-embedding-3-small (default: $CTXBUS_EMBEDDINGS_MODEL)',
      env.CTXBUS_EMBEDDINGS_MODEL,
    )
    .option(
      '--embeddings-dimensions <n>',
      'ask the model for vectors of this length (models that support it)',
    )
    .option(
      '--vector-memory-mb <mb>',
      'memory per embedding model for exact vector search in the hub (past it, the database compares: pgvector, or a slow scan in SQL)',
      '256',
    )
    .option(
      '--no-embed-items',
      'embed search queries only; another hub on the same database embeds the items',
    )
    .option('--json', 'print the URL and admin token as one JSON line');
}
