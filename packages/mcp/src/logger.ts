import type { Logger } from '@ctxbus/core/contract';

const LEVELS = { debug: 20, info: 30, warn: 40, error: 50 } as const;

export type LogLevel = keyof typeof LEVELS;

/**
 * JSON lines on stderr from `level` up. For the stdio server, where stdout belongs to the
 * protocol and MCP clients (Claude Code among them) keep a server's stderr as its log.
 */
export function stderrLogger(
  level: LogLevel = 'warn',
  write: (line: string) => void = (line) => process.stderr.write(line),
): Logger {
  const log =
    (name: LogLevel) =>
    (object: object, message?: string): void => {
      if (LEVELS[name] < LEVELS[level]) return;
      const fields = object instanceof Error ? { err: object } : object;
      const entry = { level: name, time: new Date().toISOString(), msg: message, ...fields };
      write(`${JSON.stringify(entry, errorReplacer)}\n`);
    };
  return { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') };
}

function errorReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) {
    return {
      type: value.name,
      message: value.message,
      ...('code' in value && { code: value.code }),
    };
  }
  return value;
}
