import type { CreateTaskRequest, Task, TaskEvent, TaskState } from '@ctxbus/core';
import {
  CtxbusError,
  createTaskRequestSchema,
  isTerminalTaskState,
  ROUTING_EXTENSION_URI,
  shownJson,
  TASK_LIMITS,
} from '@ctxbus/core';
import { z } from 'zod';
import { A2aRpcError } from './a2a-json-rpc.js';

// ctxbus tasks as A2A 1.0 sees them (the proto3 JSON mapping: camelCase, enum names, oneof
// members by name), and an A2A message as the ctxbus task it asks for. Pure.

/** A2A 1.0's `TaskState` JSON names; ctxbus's states are the same names without the prefix. */
export const A2A_TASK_STATES = {
  SUBMITTED: 'TASK_STATE_SUBMITTED',
  WORKING: 'TASK_STATE_WORKING',
  INPUT_REQUIRED: 'TASK_STATE_INPUT_REQUIRED',
  AUTH_REQUIRED: 'TASK_STATE_AUTH_REQUIRED',
  COMPLETED: 'TASK_STATE_COMPLETED',
  FAILED: 'TASK_STATE_FAILED',
  CANCELED: 'TASK_STATE_CANCELED',
  REJECTED: 'TASK_STATE_REJECTED',
} as const satisfies Record<TaskState, `TASK_STATE_${TaskState}`>;

/** Where an A2A stream stops: a terminal state, or one waiting for someone (interrupted). */
export function endsA2aStream(state: TaskState): boolean {
  return isTerminalTaskState(state) || state === 'INPUT_REQUIRED' || state === 'AUTH_REQUIRED';
}

const partSchema = z.looseObject({
  text: z.string().optional(),
  data: z.json().optional(),
  raw: z.string().optional(),
  url: z.string().optional(),
  mediaType: z.string().optional(),
  filename: z.string().optional(),
  metadata: z.record(z.string(), z.json()).optional(),
});

export const a2aMessageSchema = z.looseObject({
  messageId: z
    .string()
    .min(1)
    .max(TASK_LIMITS.idempotencyKeyChars - 4),
  contextId: z.string().optional(),
  taskId: z.string().optional(),
  role: z.enum(['ROLE_USER', 'ROLE_AGENT']),
  parts: z.array(partSchema).min(1),
  metadata: z.record(z.string(), z.json()).optional(),
  extensions: z.array(z.string()).optional(),
  referenceTaskIds: z.array(z.string()).optional(),
});
export type A2aMessage = z.infer<typeof a2aMessageSchema>;

/** SendMessage / SendStreamingMessage params. */
export const sendMessageParamsSchema = z.looseObject({
  message: a2aMessageSchema,
  configuration: z
    .looseObject({
      acceptedOutputModes: z.array(z.string()).optional(),
      historyLength: z.number().int().optional(),
      returnImmediately: z.boolean().optional(),
    })
    .optional(),
  metadata: z.record(z.string(), z.json()).optional(),
});
export type SendMessageParams = z.infer<typeof sendMessageParamsSchema>;

/** GetTask, CancelTask and SubscribeToTask params (the task's id). */
export const taskIdRequestSchema = z.looseObject({
  id: z.string().min(1).max(200),
  historyLength: z.number().int().optional(),
  metadata: z.record(z.string(), z.json()).optional(),
});

const A2A_STATE_NAMES = Object.values(A2A_TASK_STATES);

/** ListTasks params (A2A 1.0): empty strings and TASK_STATE_UNSPECIFIED are unset, as in proto3. */
export const listTasksParamsSchema = z.looseObject({
  tenant: z.string().max(200).optional(),
  contextId: z.string().max(200).optional(),
  status: z.enum(['TASK_STATE_UNSPECIFIED', ...A2A_STATE_NAMES]).optional(),
  pageSize: z.number().int().min(1).max(100).optional(),
  pageToken: z.string().max(200).optional(),
  historyLength: z.number().int().min(0).optional(),
  statusTimestampAfter: z.string().max(100).optional(),
  includeArtifacts: z.boolean().optional(),
});
export type ListTasksParams = z.infer<typeof listTasksParamsSchema>;

/** The ctxbus state an A2A state name stands for (null: unset). */
export function taskStateOf(name: ListTasksParams['status']): TaskState | null {
  if (name === undefined || name === 'TASK_STATE_UNSPECIFIED') return null;
  return name.slice('TASK_STATE_'.length) as TaskState;
}

/** What the routing extension's metadata on a message may carry. */
const routingRequestSchema = z.looseObject({
  requiredCapabilities: z.array(z.string()).optional(),
  preferences: z.record(z.string(), z.json()).optional(),
});

const ROUTING_KEYS = ['requiredCapabilities', 'preferences'];

function plainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The ctxbus task an A2A message asks for:
 * - title: the first line of its text parts (their whole text is the description when longer);
 * - requiredCapabilities: from the routing extension's metadata on the message (or on the
 *   request), else from the first data part's `requiredCapabilities`;
 * - input: the first data part, without its routing keys (`requiredCapabilities`,
 *   `preferences`);
 * - idempotencyKey: `a2a:<messageId>` (a message sent twice is one task);
 * - preferences: the extension's (or the data part's), and `prefer` led by `preferRuntime`
 *   when the message came through a runtime's own card.
 * Throws `validation_failed` saying what is missing.
 */
const PART_KINDS = ['text', 'data', 'raw', 'url'] as const;

/**
 * Refuses parts the task would lose: each part is one of text, data, raw or url (the proto's
 * oneof); a file (raw or url) is not taken (the cards' input modes are text/plain and
 * application/json: ContentTypeNotSupportedError), and the one data part is a JSON object,
 * the task's input. Before, a file or a second data part was dropped without a word.
 */
function checkParts(parts: SendMessageParams['message']['parts']): void {
  let dataParts = 0;
  for (const [index, part] of parts.entries()) {
    const at = `message.parts[${index}]`;
    const kinds = PART_KINDS.filter((kind) => part[kind] !== undefined);
    const [kind] = kinds;
    if (kind === undefined || kinds.length > 1) {
      throw new A2aRpcError(
        'invalidParams',
        `${at} must have exactly one of text, data, raw or url (it has ${kinds.join(', ') || 'none'})`,
        { index },
      );
    }
    if (kind === 'raw' || kind === 'url') {
      const type = part.mediaType ? ` (${part.mediaType})` : '';
      throw new A2aRpcError(
        'contentTypeNotSupported',
        `${at} is a file${type}: this agent takes text/plain and application/json parts only (text, and one data part with the task's input)`,
        { index, ...(part.mediaType && { mediaType: part.mediaType }) },
      );
    }
    if (kind !== 'data') continue;
    if (!plainObject(part.data)) {
      throw new A2aRpcError('invalidParams', `${at}.data must be a JSON object: the task's input`, {
        index,
      });
    }
    dataParts += 1;
    if (dataParts > 1) {
      throw new A2aRpcError(
        'invalidParams',
        `${at} is a second data part: a message carries one, the task's input (merge them)`,
        { index },
      );
    }
  }
}

export function taskRequestFromMessage(
  params: SendMessageParams,
  preferRuntime?: string,
): CreateTaskRequest {
  const { message } = params;
  checkParts(message.parts);
  const text = message.parts
    .map((part) => part.text)
    .filter((value): value is string => typeof value === 'string')
    .join('\n')
    .trim();
  const data = message.parts
    .map((part): unknown => part.data)
    .find((value): value is Record<string, unknown> => plainObject(value));
  const extension = routingRequestSchema.safeParse(
    message.metadata?.[ROUTING_EXTENSION_URI] ?? params.metadata?.[ROUTING_EXTENSION_URI] ?? {},
  );
  if (!extension.success) {
    throw new CtxbusError(
      'validation_failed',
      `metadata["${ROUTING_EXTENSION_URI}"] must be {requiredCapabilities?: string[], preferences?: object}`,
    );
  }
  const requiredCapabilities =
    extension.data.requiredCapabilities ??
    (Array.isArray(data?.requiredCapabilities) ? data.requiredCapabilities : undefined);
  if (!requiredCapabilities || requiredCapabilities.length === 0) {
    throw new CtxbusError(
      'validation_failed',
      `say which capabilities the task needs: metadata["${ROUTING_EXTENSION_URI}"].requiredCapabilities, or requiredCapabilities in a data part (e.g. ["code_execution"])`,
    );
  }
  const title = text.split('\n').find((line) => line.trim() !== '');
  if (title === undefined) {
    throw new CtxbusError('validation_failed', 'send a text part: its first line is the title');
  }
  const input = data
    ? Object.fromEntries(Object.entries(data).filter(([key]) => !ROUTING_KEYS.includes(key)))
    : undefined;
  const preferences = {
    ...(extension.data.preferences ?? (plainObject(data?.preferences) ? data.preferences : {})),
  } as Record<string, unknown>;
  if (preferRuntime !== undefined) {
    const listed = Array.isArray(preferences.prefer) ? preferences.prefer : [];
    preferences.prefer = [preferRuntime, ...listed.filter((name) => name !== preferRuntime)];
  }
  const request = {
    title: title.trim().slice(0, TASK_LIMITS.titleChars),
    ...(text.trim() !== title.trim() && { description: text }),
    requiredCapabilities,
    ...(input && Object.keys(input).length > 0 && { input }),
    idempotencyKey: `a2a:${message.messageId}`,
    ...(Object.keys(preferences).length > 0 && { preferences }),
  };
  const parsed = createTaskRequestSchema.safeParse(request);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new CtxbusError(
      'validation_failed',
      `the message does not make a valid task: ${issue?.path.join('.') || 'task'}: ${issue?.message ?? 'invalid'}`,
      { details: { issues: parsed.error.issues } },
    );
  }
  return request as CreateTaskRequest;
}

export interface A2aPart {
  text?: string;
  data?: unknown;
}

export interface A2aStatus {
  state: (typeof A2A_TASK_STATES)[TaskState];
  timestamp: string;
  message?: {
    messageId: string;
    taskId: string;
    contextId: string;
    role: 'ROLE_AGENT';
    parts: A2aPart[];
  };
}

export interface A2aArtifact {
  artifactId: string;
  name: string;
  parts: A2aPart[];
}

export interface A2aTask {
  id: string;
  contextId: string;
  status: A2aStatus;
  artifacts?: A2aArtifact[];
  metadata: Record<string, unknown>;
}

/**
 * The note of the event that put the task in its state (what a task waiting for input asks),
 * from its history (oldest first), if it has one.
 */
export function stateNote(task: Task, history: readonly TaskEvent[]): string | null {
  const last = history.at(-1);
  return last?.to === task.state ? last.note : null;
}

/**
 * Why a task is where it is, in a sentence, when ctxbus has one to say (`note`: the note of
 * the event that put it there, `stateNote`): an interrupted task says what it waits for.
 */
function statusNote(task: Task, note: string | null): string | null {
  if (task.error) return `${task.error.code}: ${task.error.message}`;
  const routing = task.routing ?? {};
  if (task.state === 'INPUT_REQUIRED' && note) return note;
  if (task.state === 'AUTH_REQUIRED') {
    const request = task.approval?.status === 'pending' ? task.approval.request : undefined;
    if (Array.isArray(request?.argv)) {
      const cwd = typeof request.cwd === 'string' ? ` in ${shownJson(request.cwd)}` : '';
      return `waiting for a person to approve running ${shownJson(request.argv)}${cwd}`;
    }
    if (typeof routing.approvalReason === 'string') return routing.approvalReason;
  }
  if (task.state === 'REJECTED' && typeof routing.reason === 'string') return routing.reason;
  return null;
}

/** The task's A2A status: its state, when it got there, and why when ctxbus knows. */
export function a2aStatus(task: Task, eventNote: string | null = null): A2aStatus {
  const note = statusNote(task, eventNote);
  return {
    state: A2A_TASK_STATES[task.state],
    timestamp: task.updatedAt,
    ...(note !== null && {
      message: {
        messageId: `${task.id}:${task.state.toLowerCase()}`,
        taskId: task.id,
        contextId: task.id,
        role: 'ROLE_AGENT' as const,
        parts: [{ text: note }],
      },
    }),
  };
}

/** The task's result as one artifact (a data part), once it has one. */
export function a2aArtifact(task: Task): A2aArtifact | null {
  if (task.result === null) return null;
  return { artifactId: `${task.id}:result`, name: 'result', parts: [{ data: task.result }] };
}

/**
 * A ctxbus task as an A2A Task. `contextId` is the task's id (ctxbus keeps no A2A contexts);
 * `metadata[ROUTING_EXTENSION_URI]` is the routing decision (runtime, candidates, reasons)
 * and `metadata.ctxbus` where the task stands in ctxbus.
 */
export function toA2aTask(task: Task, history: readonly TaskEvent[] = []): A2aTask {
  const artifact = a2aArtifact(task);
  return {
    id: task.id,
    contextId: task.id,
    status: a2aStatus(task, stateNote(task, history)),
    ...(artifact && { artifacts: [artifact] }),
    metadata: {
      [ROUTING_EXTENSION_URI]: task.routing,
      ctxbus: {
        state: task.state,
        origin: task.origin,
        targetRuntime: task.targetRuntime,
        requiredCapabilities: task.requiredCapabilities,
        attempts: task.attempts,
      },
    },
  };
}
