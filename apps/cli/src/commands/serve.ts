import { join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { ErrorCode } from '@ctxbus/core/contract';
import { CtxbusError } from '@ctxbus/core/light';
import { parseDuration, parseRetention } from '../retention-options.js';
import { storeTarget } from '../store-target.js';
import type { HubRunOptions } from './run-hub.js';

export interface ServeOptions {
  port: string;
  host: string;
  publicUrl?: string;
  corsOrigin?: string[];
  data?: string;
  store?: string;
  capabilities?: string;
  migrate: boolean;
  logLevel: string;
  maxBodyBytes: string;
  maxStreamPendingBytes: string;
  maxStreamsPerToken: string;
  maxStreamsPerTeam: string;
  durability: string;
  json?: boolean;
  allowPrivateWebhooks: boolean;
  webhookAttempts: string;
  webhookBackoffMs: string;
  mcpMaxSessionsPerToken: string;
  mcpMaxSessionsPerTeam: string;
  mcpMaxSessions: string;
  retentionMode: string;
  retain: string;
  sweepInterval: string;
  approvalTtl: string;
  /** Unset: $CTXBUS_CONFLICT_WINDOW, else 10m (the help says so once). */
  conflictWindow?: string;
  approvalKey?: string;
  embeddingsUrl?: string;
  embeddingsModel?: string;
  embeddingsDimensions?: string;
  embedItems: boolean;
  vectorMemoryMb: string;
}

/**
 * V8's young generation, in MB, for the hub. Node's default lets the heap balloon under write
 * bursts (measured: 351 MB RSS at 100k items); 12 MB keeps it near 250 MB at the same speed.
 */
export const HUB_YOUNG_GENERATION_MB = 12;

/**
 * The options as the hub runs with them, or the error `serve` would exit with; `env` gives
 * what the options leave to the environment.
 */
export function validateServeOptions(
  options: ServeOptions,
  env: NodeJS.ProcessEnv = process.env,
): HubRunOptions {
  const port = Number(options.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new CtxbusError('validation_failed', `--port must be 0-65535 (got "${options.port}")`);
  }
  const maxBodyBytes = Number(options.maxBodyBytes);
  if (!Number.isInteger(maxBodyBytes) || maxBodyBytes < 1024) {
    throw new CtxbusError(
      'validation_failed',
      '--max-body-bytes must be an integer of at least 1024',
    );
  }
  const maxStreamPendingBytes = Number(options.maxStreamPendingBytes);
  if (!Number.isInteger(maxStreamPendingBytes) || maxStreamPendingBytes < 4096) {
    throw new CtxbusError(
      'validation_failed',
      `--max-stream-pending-bytes must be an integer of at least 4096 (got "${options.maxStreamPendingBytes}")`,
    );
  }
  if (options.durability !== 'normal' && options.durability !== 'full') {
    throw new CtxbusError(
      'validation_failed',
      `--durability must be normal or full (got "${options.durability}")`,
    );
  }
  const webhookAttempts = Number(options.webhookAttempts);
  if (!Number.isInteger(webhookAttempts) || webhookAttempts < 1 || webhookAttempts > 50) {
    throw new CtxbusError(
      'validation_failed',
      '--webhook-attempts must be an integer from 1 to 50',
    );
  }
  const webhookBackoffMs = Number(options.webhookBackoffMs);
  if (
    !Number.isInteger(webhookBackoffMs) ||
    webhookBackoffMs < 10 ||
    webhookBackoffMs > 3_600_000
  ) {
    throw new CtxbusError(
      'validation_failed',
      '--webhook-backoff-ms must be an integer from 10 to 3600000',
    );
  }
  const mcp = {
    maxSessionsPerToken: positiveInteger(
      options.mcpMaxSessionsPerToken,
      '--mcp-max-sessions-per-token',
      10_000,
    ),
    maxSessionsPerTeam: positiveInteger(
      options.mcpMaxSessionsPerTeam,
      '--mcp-max-sessions-per-team',
      1_000_000,
    ),
    maxSessions: positiveInteger(options.mcpMaxSessions, '--mcp-max-sessions', 1_000_000),
  };
  if (options.retentionMode !== 'delete' && options.retentionMode !== 'archive') {
    throw new CtxbusError(
      'validation_failed',
      `--retention-mode must be delete or archive (got "${options.retentionMode}")`,
    );
  }
  const sweepIntervalMs = parseDuration(options.sweepInterval, '--sweep-interval');
  if (sweepIntervalMs < 100) {
    throw new CtxbusError('validation_failed', '--sweep-interval must be at least 100ms');
  }
  const approvalTtlMs = parseDuration(options.approvalTtl, '--approval-ttl');
  if (approvalTtlMs < 1_000 || approvalTtlMs > 7 * 86_400_000) {
    throw new CtxbusError('validation_failed', '--approval-ttl must be from 1s to 7d');
  }
  const conflictWindow = options.conflictWindow ?? process.env.CTXBUS_CONFLICT_WINDOW ?? '10m';
  const conflictWindowMs =
    conflictWindow.trim() === 'off' ? 0 : parseDuration(conflictWindow, '--conflict-window');
  if (conflictWindowMs > 7 * 86_400_000) {
    throw new CtxbusError('validation_failed', '--conflict-window must be at most 7d (or off)');
  }
  const retention = {
    mode: options.retentionMode,
    maxAgeMs: parseRetention(options.retain),
    intervalMs: sweepIntervalMs,
  } as const;
  const embeddings = embeddingsSettings(options, env);
  const vectorMemoryMb = Number(options.vectorMemoryMb);
  if (!Number.isFinite(vectorMemoryMb) || vectorMemoryMb < 0 || vectorMemoryMb > 1_000_000) {
    throw new CtxbusError(
      'validation_failed',
      `--vector-memory-mb must be a number of megabytes, 0 or more (got "${options.vectorMemoryMb}")`,
    );
  }
  const levels = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];
  if (!levels.includes(options.logLevel)) {
    throw new CtxbusError('validation_failed', `--log-level must be one of ${levels.join(', ')}`);
  }
  const store = storeTarget(options, env);
  return {
    port,
    host: options.host,
    publicUrl: options.publicUrl ? publicUrlOption(options.publicUrl) : null,
    corsOrigins: corsOrigins(options.corsOrigin, env.CTXBUS_CORS_ORIGINS),
    store,
    capabilities: capabilitiesFile(options.capabilities, store, env),
    migrate: options.migrate,
    logLevel: options.logLevel,
    maxBodyBytes,
    maxStreamPendingBytes,
    maxStreamsPerToken: positiveInteger(
      options.maxStreamsPerToken,
      '--max-streams-per-token',
      1_000_000,
    ),
    maxStreamsPerTeam: positiveInteger(
      options.maxStreamsPerTeam,
      '--max-streams-per-team',
      1_000_000,
    ),
    durability: options.durability,
    json: options.json === true,
    retention,
    approvalTtlMs,
    conflictWindowMs,
    approvalKey: options.approvalKey ? resolve(options.approvalKey) : null,
    webhooks: {
      allowPrivateEndpoints: options.allowPrivateWebhooks === true,
      maxAttempts: webhookAttempts,
      backoffBaseMs: webhookBackoffMs,
    },
    mcp,
    validateResponses: env.CTXBUS_VALIDATE_RESPONSES === '1',
    embeddings,
    vectorMemoryMb,
  };
}

/**
 * The capabilities file: --capabilities, else $CTXBUS_CAPABILITIES (both must exist), else
 * capabilities.yaml in the data directory, loaded if it exists or once it appears. A hub on
 * PostgreSQL has no data directory: without the option its matrix is empty.
 */
export function capabilitiesFile(
  flag: string | undefined,
  store: HubRunOptions['store'],
  env: NodeJS.ProcessEnv = process.env,
): HubRunOptions['capabilities'] {
  const named = flag || env.CTXBUS_CAPABILITIES;
  if (named) return { file: resolve(named), optional: false };
  if (store.kind === 'sqlite')
    return { file: join(store.dataDir, 'capabilities.yaml'), optional: true };
  return null;
}

/** An integer from 1 to `max`, or a validation error naming the option. */
function positiveInteger(value: string, option: string, max: number): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1 || parsed > max) {
    throw new CtxbusError(
      'validation_failed',
      `${option} must be an integer from 1 to ${max} (got "${value}")`,
    );
  }
  return parsed;
}

/** The embedding provider's settings, or null without --embeddings-url. */
/**
 * --cors-origin (else $CTXBUS_CORS_ORIGINS): exact origins, scheme://host[:port] with nothing
 * after. `*` is refused: any site could then read the API with a token it tricked a user into
 * pasting, and the hub never needs it (its own dashboard is same-origin).
 */
export function corsOrigins(flags: string[] | undefined, env: string | undefined): string[] {
  const values = flags?.length
    ? flags
    : (env ?? '')
        .split(',')
        .map((value) => value.trim())
        .filter(Boolean);
  return [
    ...new Set(
      values.map((value) => {
        let url: URL | null = null;
        try {
          url = new URL(value);
        } catch {}
        if (!url || !['http:', 'https:'].includes(url.protocol) || url.origin !== value) {
          throw new CtxbusError(
            'validation_failed',
            `--cors-origin must be an origin such as https://app.example.com, with no path or trailing slash${value === '*' ? ' (* is not allowed: list each origin)' : ''} (got "${value}")`,
          );
        }
        return url.origin;
      }),
    ),
  ];
}

/** --public-url: an http(s) URL without query or fragment, kept without trailing slashes. */
function publicUrlOption(value: string): string {
  let url: URL | null = null;
  try {
    url = new URL(value);
  } catch {}
  if (!url || !['http:', 'https:'].includes(url.protocol) || url.search || url.hash) {
    throw new CtxbusError(
      'validation_failed',
      `--public-url must be an http(s) URL without query or fragment (got "${value}")`,
    );
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

function embeddingsSettings(
  options: ServeOptions,
  env: NodeJS.ProcessEnv,
): HubRunOptions['embeddings'] {
  const url = options.embeddingsUrl?.trim();
  const model = options.embeddingsModel?.trim();
  if (!url) {
    if (model || options.embeddingsDimensions !== undefined) {
      throw new CtxbusError(
        'validation_failed',
        '--embeddings-model and --embeddings-dimensions need --embeddings-url (or $CTXBUS_EMBEDDINGS_URL)',
      );
    }
    return null;
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new CtxbusError('validation_failed', `--embeddings-url is not a URL (got "${url}")`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new CtxbusError('validation_failed', '--embeddings-url must be an http or https URL');
  }
  if (parsed.username || parsed.password) {
    throw new CtxbusError(
      'validation_failed',
      '--embeddings-url must not carry credentials; put the key in $CTXBUS_EMBEDDINGS_KEY',
    );
  }
  if (!model) {
    throw new CtxbusError(
      'validation_failed',
      '--embeddings-url needs --embeddings-model (or $CTXBUS_EMBEDDINGS_MODEL)',
    );
  }
  let dimensions: number | undefined;
  if (options.embeddingsDimensions !== undefined) {
    dimensions = Number(options.embeddingsDimensions);
    if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > 16_000) {
      throw new CtxbusError(
        'validation_failed',
        '--embeddings-dimensions must be an integer from 1 to 16000',
      );
    }
  }
  const apiKey = env.CTXBUS_EMBEDDINGS_KEY?.trim();
  return {
    url,
    model,
    ...(apiKey && { apiKey }),
    ...(dimensions !== undefined && { dimensions }),
    embedItems: options.embedItems !== false,
  };
}

export type WorkerMessage = { type: 'failed'; code: ErrorCode; message: string };

/**
 * Runs the hub in a worker thread with a bounded young generation (see
 * HUB_YOUNG_GENERATION_MB), whatever flags node was started with. This thread only relays
 * signals: SIGINT or SIGTERM asks the hub to close cleanly.
 */
export async function serve(options: ServeOptions): Promise<void> {
  const runOptions = validateServeOptions(options);
  const worker = new Worker(new URL('./serve-worker.js', import.meta.url), {
    workerData: runOptions,
    resourceLimits: { maxYoungGenerationSizeMb: HUB_YOUNG_GENERATION_MB },
  });
  let failure: CtxbusError | null = null;
  const stop = (signal: string) => worker.postMessage({ type: 'stop', signal });
  const onSigint = () => stop('SIGINT');
  const onSigterm = () => stop('SIGTERM');
  process.on('SIGINT', onSigint);
  process.on('SIGTERM', onSigterm);
  try {
    await new Promise<void>((resolve, reject) => {
      worker.on('message', (message: WorkerMessage) => {
        if (message.type === 'failed') failure = new CtxbusError(message.code, message.message);
      });
      worker.once('error', reject);
      worker.once('exit', (code) => {
        if (failure) reject(failure);
        else if (code !== 0)
          reject(new CtxbusError('internal', `the hub stopped unexpectedly (exit code ${code})`));
        else resolve();
      });
    });
  } finally {
    process.off('SIGINT', onSigint);
    process.off('SIGTERM', onSigterm);
  }
}
