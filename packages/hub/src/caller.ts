import type { Viewer } from '@ctxbus/core';
import { CtxbusError } from '@ctxbus/core';
import type { Caller } from './route-definition.js';

/** The team and runtime a runtime token acts as. */
export function viewerOf(caller: Caller): Viewer {
  if (caller.role !== 'runtime' || caller.teamId === null || caller.runtime === null) {
    throw new CtxbusError(
      'forbidden',
      'admin tokens manage tokens only; use a runtime token (ctxbus token create --team T --runtime R)',
    );
  }
  return { teamId: caller.teamId, runtime: caller.runtime };
}
