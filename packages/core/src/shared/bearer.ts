import { CtxbusError } from './errors.js';

/**
 * The Authorization header for `token`. A token is one run of visible ASCII: one read from a
 * two-line file (`CTXBUS_TOKEN=$(cat file)`) or pasted with a space would fail in the HTTP
 * layer as "cannot reach the hub", with the secret in the message. Refused here instead, the
 * token never named.
 */
export function bearer(token: string): string {
  if (!/^[\x21-\x7e]+$/.test(token)) {
    throw new CtxbusError(
      'validation_failed',
      'the token is not one line of visible characters (it holds a line break, a space or a control character): check --token, CTXBUS_TOKEN or the file it was read from',
    );
  }
  return `Bearer ${token}`;
}
