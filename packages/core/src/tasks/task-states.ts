// The task states alone, without zod: the CLI names them in its help text at every start.

/** A2A 1.0 task states, exactly as on the wire. */
export const TASK_STATES = [
  'SUBMITTED',
  'WORKING',
  'INPUT_REQUIRED',
  'AUTH_REQUIRED',
  'COMPLETED',
  'FAILED',
  'CANCELED',
  'REJECTED',
] as const;

export type TaskState = (typeof TASK_STATES)[number];
