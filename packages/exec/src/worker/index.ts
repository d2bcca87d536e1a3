// @ctxbus/exec/worker: the task worker behind `ctxbus worker` (claims code_execution tasks from
// a hub, runs them through this package's checks, reports under a lease) and its hub port.

export type { WorkerHub, WorkerHubSettings } from './hub-http.js';
export { createWorkerHub } from './hub-http.js';
export type {
  ClaimNext,
  CommandResult,
  TaskWorkerOptions,
  WorkerHubApi,
  WorkerLimits,
} from './task-worker.js';
export {
  DEFAULT_WORKER_LIMITS,
  fitResult,
  originTrusted,
  reasonForOrigin,
  TaskWorker,
} from './task-worker.js';
