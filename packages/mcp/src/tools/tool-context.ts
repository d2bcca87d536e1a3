import type { ContextBackend } from '../context-backend.js';
import type { Logger } from '../logger.js';

/** What every tool handler gets. */
export interface ToolContext {
  backend: ContextBackend;
  logger: Logger;
  /** Runtime the shared bundle is formatted for; undefined = the token's runtime. */
  runtime: string | undefined;
}
