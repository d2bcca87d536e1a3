// Tasks: states and transitions, the task's status items, approvals and permission requests,
// and the task half of the hub's API.
export type { CommandIdentity } from './command-digest.js';
export { commandDigest } from './command-digest.js';
export type { PermissionRequestBody } from './permission-api-schemas.js';
export {
  MAX_PERMISSION_WAIT_SECONDS,
  MIN_PERMISSION_WAIT_SECONDS,
  PERMISSION_REQUEST_BECAUSE,
} from './permission-limits.js';
export type { ChannelRefusal, CreateTaskRequest, UpdateTaskRequest } from './task-api-schemas.js';
export {
  ACTIVE_TASK_STATES,
  createTaskRequestSchema,
  UPDATE_TASK_STATES,
  updateTaskRequestSchema,
} from './task-api-schemas.js';
export type { TaskState } from './task-states.js';
export { TASK_STATES } from './task-states.js';
export type { TaskStatusEvent, TaskStatusReport } from './task-status-item.js';
export {
  followTaskStatus,
  TASK_TAG,
  taskNeedsSomeone,
  taskOutputKey,
  taskOutputOf,
  taskScopeKey,
  taskStatusItem,
  taskStatusOf,
} from './task-status-item.js';
export type { NewTask, Task, TaskApproval, TaskError, TaskEvent } from './tasks.js';
export {
  assertTransition,
  capabilityNameSchema,
  DEFAULT_TASK_LEASE_MS,
  DEFAULT_TASK_MAX_ATTEMPTS,
  isTerminalTaskState,
  newTaskId,
  newTaskSchema,
  notLeaseHolderError,
  staleLeaseError,
  TASK_LIMITS,
  taskApprovalSchema,
  taskErrorSchema,
  taskIdSchema,
  taskNoteSchema,
  taskResultSchema,
  WAITING_TASK_STATES,
} from './tasks.js';
