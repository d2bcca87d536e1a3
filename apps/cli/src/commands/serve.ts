import { CtxbusError } from '@ctxbus/core';
import { mintToken, startHub } from '@ctxbus/hub';
import { openSqliteStore } from '@ctxbus/store';
import { pino } from 'pino';
import { databasePath, defaultDataDir, lockDataDir } from '../data-dir.js';
import { printLine } from '../output.js';
import { VERSION } from '../version.js';

export interface ServeOptions {
  port: string;
  host: string;
  data?: string;
  logLevel: string;
  maxBodyBytes: string;
  durability: 'normal' | 'full';
  json?: boolean;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

function parsePort(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new CtxbusError('validation_failed', `--port must be 0-65535 (got "${value}")`);
  }
  return port;
}

export async function serve(options: ServeOptions): Promise<void> {
  const port = parsePort(options.port);
  const maxBodyBytes = Number(options.maxBodyBytes);
  if (!Number.isInteger(maxBodyBytes) || maxBodyBytes < 1024) {
    throw new CtxbusError(
      'validation_failed',
      '--max-body-bytes must be an integer of at least 1024',
    );
  }
  if (options.durability !== 'normal' && options.durability !== 'full') {
    throw new CtxbusError(
      'validation_failed',
      `--durability must be normal or full (got "${options.durability}")`,
    );
  }
  const logger = pino(
    { level: options.logLevel, base: { service: 'ctxbus-hub' } },
    pino.destination(2),
  );
  const dataDir = options.data ?? defaultDataDir();
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
      port,
      version: VERSION,
      maxBodyBytes,
      validateResponses: process.env.CTXBUS_VALIDATE_RESPONSES === '1',
    });
    lock.update({ url: running.url, startedAt: new Date().toISOString() });
    logger.info({ url: running.url, dataDir }, 'hub listening');
    if (options.json) {
      printLine(JSON.stringify({ url: running.url, adminToken, dataDir, version: VERSION }));
    } else {
      printLine(`ctxbus ${VERSION} hub listening on ${running.url}`);
      printLine(`data directory: ${dataDir} (embedded SQLite store)`);
      if (adminToken) {
        printLine(`admin token (shown once, keep it safe): ${adminToken}`);
        printLine(
          `next: ctxbus token create --url ${running.url} --admin-token <admin token> --team <team> --runtime claude-code`,
        );
      }
    }

    await new Promise<void>((resolve) => {
      const stop = (signal: string) => {
        logger.info({ signal }, 'shutting down');
        resolve();
      };
      process.once('SIGINT', () => stop('SIGINT'));
      process.once('SIGTERM', () => stop('SIGTERM'));
    });
    await running.close();
  } finally {
    await store.close();
    lock.release();
  }
}
