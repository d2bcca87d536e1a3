import type { CtxbusError, Logger } from '@ctxbus/core';

// A damaged database is answered to every call (and /health) until the file is restored: the
// log says it once, whether the integrity check or a request found it first.

const said = new WeakSet<CtxbusError>();

/** Logs the store's damage the first time it is met (the same error object every time). */
export function logStoreDamage(logger: Logger, damage: CtxbusError): void {
  if (said.has(damage)) return;
  said.add(damage);
  logger.error({ reason: 'store_damaged' }, damage.message);
}
