/**
 * The logging surface ctxbus libraries take: a subset of pino's, so a pino logger fits as is.
 * Packages never log to the console; they are given one of these.
 */
export interface Logger {
  debug(object: object, message?: string): void;
  info(object: object, message?: string): void;
  warn(object: object, message?: string): void;
  error(object: object, message?: string): void;
}

const noop = () => {};

/** Drops everything: the default when no logger is injected. */
export const silentLogger: Logger = { debug: noop, info: noop, warn: noop, error: noop };
