/** The logging surface ctxbus libraries use: a subset of pino's, so a pino logger fits. */
export interface Logger {
  debug(object: object, message?: string): void;
  info(object: object, message?: string): void;
  warn(object: object, message?: string): void;
  error(object: object, message?: string): void;
}

const noop = () => {};

/** A logger that drops everything (the default when none is injected). */
export const silentLogger: Logger = { debug: noop, info: noop, warn: noop, error: noop };
