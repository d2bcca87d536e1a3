import type { Viewer } from '@ctxbus/core';
import { CtxbusError } from '@ctxbus/core';

/** Who a verified bearer token speaks for. */
export interface Caller {
  tokenId: string;
  role: 'admin' | 'runtime';
  teamId: string | null;
  runtime: string | null;
}

/** The caller of an admin route. */
export interface AdminCaller extends Caller {
  role: 'admin';
}

/** The caller of a runtime route, which always has a team and a runtime. */
export interface RuntimeCaller extends Caller {
  role: 'runtime';
  teamId: string;
  runtime: string;
}

/** The caller as an admin, or a `forbidden` error. */
export function adminCallerOf(caller: Caller): AdminCaller {
  if (caller.role !== 'admin')
    throw new CtxbusError('forbidden', 'this route needs an admin token');
  return caller as AdminCaller;
}

/** The caller as a runtime (a team and a runtime), or a `forbidden` error. */
export function runtimeCallerOf(caller: Caller): RuntimeCaller {
  if (caller.role !== 'runtime' || caller.teamId === null || caller.runtime === null) {
    throw new CtxbusError(
      'forbidden',
      'admin tokens manage tokens only; use a runtime token (ctxbus token create --team T --runtime R)',
    );
  }
  return caller as RuntimeCaller;
}

/** The team and runtime a runtime token acts as. */
export function viewerOf(caller: RuntimeCaller): Viewer {
  return { teamId: caller.teamId, runtime: caller.runtime };
}
