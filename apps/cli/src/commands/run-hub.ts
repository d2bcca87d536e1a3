import { mintToken, startHub } from '@ctxbus/hub';
import { openSqliteStore } from '@ctxbus/store';
import { pino } from 'pino';
import { databasePath, lockDataDir } from '../data-dir.js';
import { printLine } from '../output.js';
import { VERSION } from '../version.js';
import { mcpExtension } from './mcp-extension.js';

/** Serve options after validation, as the hub worker receives them. */
export interface HubRunOptions {
  port: number;
  host: string;
  dataDir: string;
  logLevel: string;
  maxBodyBytes: number;
  durability: 'normal' | 'full';
  json: boolean;
  validateResponses: boolean;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/**
 * Runs the hub until `stopped` resolves: takes the data directory, opens the store, mints the
 * first admin token when there is none, listens, prints the URL, then closes everything.
 */
export async function runHub(options: HubRunOptions, stopped: Promise<string>): Promise<void> {
  const logger = pino(
    { level: options.logLevel, base: { service: 'ctxbus-hub' } },
    pino.destination(2),
  );
  const { dataDir } = options;
  const lock = lockDataDir(dataDir);
  const store = openSqliteStore({ path: databasePath(dataDir), durability: options.durability });
  let adminToken: string | null = null;
  try {
    const admins = (await store.listTokens()).filter((token) => token.role === 'admin');
    if (admins.length === 0) {
      adminToken = (
        await mintToken(store, { role: 'admin', teamId: null, runtime: null, label: 'first start' })
      ).token;
    }
    if (!LOOPBACK.has(options.host)) {
      logger.warn(
        { host: options.host },
        'the hub listens beyond loopback: anyone who can reach it and holds a token can use it',
      );
    }
    const running = await startHub({
      store,
      logger,
      host: options.host,
      port: options.port,
      version: VERSION,
      maxBodyBytes: options.maxBodyBytes,
      validateResponses: options.validateResponses,
      extensions: [mcpExtension({ host: options.host, logger })],
    });
    lock.update({ url: running.url, startedAt: new Date().toISOString() });
    logger.info({ url: running.url, dataDir }, 'hub listening');
    if (options.json) {
      printLine(JSON.stringify({ url: running.url, adminToken, dataDir, version: VERSION }));
    } else {
      printLine(`ctxbus ${VERSION} hub listening on ${running.url}`);
      printLine(`data directory: ${dataDir} (embedded SQLite store)`);
      printLine(`MCP (Streamable HTTP): ${running.url}/mcp`);
      if (adminToken) {
        printLine(`admin token (shown once, keep it safe): ${adminToken}`);
        printLine(
          `next: ctxbus token create --url ${running.url} --admin-token <admin token> --team <team> --runtime claude-code`,
        );
      }
    }
    const signal = await stopped;
    logger.info({ signal }, 'shutting down');
    await running.close();
  } finally {
    await store.close();
    lock.release();
  }
}
