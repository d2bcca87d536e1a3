import type { Logger } from '@ctxbus/core/contract';
import type { ContextBackend } from '../context-backend.js';

/** What every tool handler gets. */
export interface ToolContext {
  backend: ContextBackend;
  logger: Logger;
  /** Runtime the shared bundle is formatted for; undefined = the token's runtime. */
  runtime: string | undefined;
}
