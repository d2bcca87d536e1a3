import { v7 as uuidv7 } from 'uuid';
import { z } from 'zod';
import { CtxbusError } from '../shared/errors.js';
import { parseOrThrow } from '../shared/validation.js';

/**
 * Seed 004's first layer: the context of one run of a routine, alive until the run returns.
 * It holds the run's inputs, its intermediate variables, the exports it declares and its step
 * history; `createChild` starts a sub-run and `exportToParent` hands a value up to the run that
 * started it. Pure and deterministic: the clock and the id maker are injected.
 */

/** A JSON value (what a run may hold, export, and what the bus can store). */
export type JsonValue =
  | string
  | number
  | boolean
  | null
  | JsonValue[]
  | { [key: string]: JsonValue };

export const STEP_STATUSES = ['completed', 'failed', 'skipped'] as const;
export type StepStatus = (typeof STEP_STATUSES)[number];

/** One finished step of a run. */
export interface ExecutionStep {
  stepId: string;
  name: string;
  status: StepStatus;
  startedAt: string;
  finishedAt: string;
  /** A short note on what the step did (or why it failed). */
  note?: string;
}

/** The history steps folded by the optimizer's `summarize` strategy. */
export interface ExecutionSummary {
  steps: number;
  byStatus: Record<StepStatus, number>;
  names: string[];
  from: string;
  to: string;
}

/** How large a run may grow; the optimizer brings a run back within these. */
export interface RunBounds {
  /** Steps kept in `stepHistory` (older ones are summarized). */
  maxSteps: number;
  /** Bytes (UTF-8 JSON) of all intermediate variables together. */
  maxVarBytes: number;
  /** Bytes of one intermediate variable. */
  maxValueBytes: number;
  /** How deep `createChild` may nest (a runaway recursion is refused). */
  maxDepth: number;
}

export const DEFAULT_RUN_BOUNDS: RunBounds = {
  maxSteps: 50,
  maxVarBytes: 64_000,
  maxValueBytes: 16_000,
  maxDepth: 16,
};

export const runBoundsSchema = z.strictObject({
  maxSteps: z.int().positive().optional(),
  maxVarBytes: z.int().positive().optional(),
  maxValueBytes: z.int().positive().optional(),
  maxDepth: z.int().positive().max(256).optional(),
});

/** A variable or export name: letters, digits, `.`, `_`, `-`, starting with a letter or digit. */
export const runVariableNameSchema = z
  .string()
  .max(100)
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]*$/,
    'a run variable name is letters, digits, . _ or -, starting with a letter or digit',
  );

function variableName(name: string): string {
  return parseOrThrow(runVariableNameSchema, name, 'name');
}

/** What a child run inherits of its parent's variables: all, none, or the names listed. */
export type Inherit = boolean | readonly string[];

const inheritSchema = z.union([z.boolean(), z.array(runVariableNameSchema).max(1_000)]);

export interface RunContextOptions {
  routineId: string;
  inputs?: Record<string, JsonValue>;
  /** Names the run promises to export when it finishes (seed 004's `exports[]` list). */
  declaredExports?: readonly string[];
  clock?: () => Date;
  newId?: () => string;
  bounds?: Partial<RunBounds>;
}

/** Byte length of a value as UTF-8 JSON (what the bus would store). */
export function jsonBytes(value: unknown): number {
  const text = JSON.stringify(value) ?? '';
  let bytes = 0;
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0;
    bytes += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
  }
  return bytes;
}

export class RunContext {
  readonly runId: string;
  readonly routineId: string;
  readonly parentRunId: string | undefined;
  readonly parent: RunContext | undefined;
  readonly depth: number;
  readonly inputs: Readonly<Record<string, JsonValue>>;
  /**
   * The parent's variables as they were when this run started (seed 004: "child inherits
   * parent variables"): read through `get` below the run's own inputs and variables, never
   * exported, never written back. Empty for a root run or a child started with `inherit: false`.
   */
  readonly inherited: Readonly<Record<string, JsonValue>>;
  readonly intermediateVars: Record<string, JsonValue> = {};
  readonly exports: Record<string, JsonValue> = {};
  readonly declaredExports: Set<string>;
  readonly stepHistory: ExecutionStep[] = [];
  /** Steps folded away by the optimizer, counted so the history still tells the whole run. */
  summarized: ExecutionSummary | undefined;
  readonly bounds: RunBounds;
  readonly clock: () => Date;
  private readonly newId: () => string;
  private current: { stepId: string; name: string; startedAt: string } | undefined;

  constructor(options: RunContextOptions & { inherit?: Inherit }, parent?: RunContext) {
    this.routineId = parseOrThrow(z.string().min(1).max(200), options.routineId, 'routineId');
    this.parent = parent;
    this.parentRunId = parent?.runId;
    this.depth = parent ? parent.depth + 1 : 0;
    this.clock = options.clock ?? parent?.clock ?? (() => new Date());
    this.newId = options.newId ?? parent?.newId ?? uuidv7;
    this.bounds = {
      ...(parent?.bounds ?? DEFAULT_RUN_BOUNDS),
      ...parseOrThrow(runBoundsSchema, options.bounds ?? {}, 'bounds'),
    };
    if (this.depth > this.bounds.maxDepth) {
      throw new CtxbusError(
        'limit_reached',
        `run ${options.routineId} would nest ${this.depth} levels deep; the bound is ${this.bounds.maxDepth}`,
      );
    }
    this.runId = this.newId();
    this.inputs = Object.freeze({ ...(options.inputs ?? {}) });
    this.inherited = Object.freeze(parent ? parent.inheritable(options.inherit ?? true) : {});
    this.declaredExports = new Set(
      (options.declaredExports ?? []).map((name) => variableName(name)),
    );
  }

  /** The step running now, if one was started and not finished. */
  get currentStepId(): string | undefined {
    return this.current?.stepId;
  }

  /** A variable by name: an intermediate variable first, else an input, else an inherited one. */
  get(name: string): JsonValue | undefined {
    if (this.owns(name)) return this.own(name);
    return Object.hasOwn(this.inherited, name) ? this.inherited[name] : undefined;
  }

  private owns(name: string): boolean {
    return Object.hasOwn(this.intermediateVars, name) || Object.hasOwn(this.inputs, name);
  }

  /** The run's own value of `name` (a variable, else an input): what it may export. */
  private own(name: string): JsonValue | undefined {
    if (Object.hasOwn(this.intermediateVars, name)) return this.intermediateVars[name];
    return Object.hasOwn(this.inputs, name) ? this.inputs[name] : undefined;
  }

  /**
   * A copy of every variable a child of this run sees (inherited, then inputs, then variables,
   * the later shadowing the earlier), or of the names `inherit` lists.
   */
  private inheritable(inherit: Inherit): Record<string, JsonValue> {
    if (inherit === false) return {};
    const all = { ...this.inherited, ...this.inputs, ...this.intermediateVars };
    const names = inherit === true ? Object.keys(all) : inherit;
    const picked = names
      .filter((name) => Object.hasOwn(all, name))
      .map((name) => [name, all[name]]);
    // A deep copy (JSON values only), so neither run reaches into the other's objects.
    return JSON.parse(JSON.stringify(Object.fromEntries(picked))) as Record<string, JsonValue>;
  }

  /** Sets an intermediate variable. A value over `maxValueBytes` is refused. */
  set(name: string, value: JsonValue): this {
    variableName(name);
    const bytes = jsonBytes(value);
    if (bytes > this.bounds.maxValueBytes) {
      throw new CtxbusError(
        'payload_too_large',
        `variable ${name} is ${bytes} bytes; a run variable holds at most ${this.bounds.maxValueBytes}`,
      );
    }
    this.intermediateVars[name] = value;
    return this;
  }

  /** Declares that the run will export `name` (filled by `export` or from its variables). */
  declareExport(name: string): this {
    this.declaredExports.add(variableName(name));
    return this;
  }

  /** Sets an export of this run (and declares it). */
  export(name: string, value: JsonValue): this {
    this.declareExport(name);
    this.exports[name] = value;
    return this;
  }

  /**
   * What the run exports when it finishes: every `export`ed value, and each declared name
   * that was only set as a variable (or given as an input).
   */
  exported(): Record<string, JsonValue> {
    const out: Record<string, JsonValue> = {};
    for (const name of this.declaredExports) {
      const value = Object.hasOwn(this.exports, name) ? this.exports[name] : this.own(name);
      if (value !== undefined) out[name] = value;
    }
    return out;
  }

  /** Starts a step (the previous one must have finished). */
  beginStep(name: string): string {
    if (this.current) {
      throw new CtxbusError(
        'conflict',
        `step ${this.current.name} is still running; finish it before starting ${name}`,
      );
    }
    const stepId = this.newId();
    this.current = { stepId, name, startedAt: this.clock().toISOString() };
    return stepId;
  }

  /** Finishes the running step and appends it to the history. */
  endStep(status: StepStatus, note?: string): ExecutionStep {
    if (!this.current) throw new CtxbusError('conflict', 'no step is running');
    const step: ExecutionStep = {
      ...this.current,
      status,
      finishedAt: this.clock().toISOString(),
      ...(note !== undefined && { note }),
    };
    this.current = undefined;
    this.stepHistory.push(step);
    return step;
  }

  /** Runs `body` as one step: completed when it returns, failed (and rethrown) when it throws. */
  async step<T>(name: string, body: (run: this) => T | Promise<T>): Promise<T> {
    this.beginStep(name);
    try {
      const result = await body(this);
      this.endStep('completed');
      return result;
    } catch (error) {
      this.endStep('failed', error instanceof Error ? error.message : String(error));
      throw error;
    }
  }

  /**
   * A sub-run: same clock, id maker and bounds, its own `inputs`, and this run's variables
   * inherited as they are now (`inherit`: true by default, false for none, or the names to
   * pass). The child's own inputs and variables shadow what it inherits; it answers only
   * through `exportToParent`, so nothing it sets changes this run otherwise.
   */
  createChild(
    inputs: Record<string, JsonValue> = {},
    options: { routineId?: string; declaredExports?: readonly string[]; inherit?: Inherit } = {},
  ): RunContext {
    const inherit = parseOrThrow(inheritSchema, options.inherit ?? true, 'inherit');
    return new RunContext({ routineId: this.routineId, ...options, inputs, inherit }, this);
  }

  /** Hands a value to the parent run: it becomes the parent's intermediate variable `key`. */
  exportToParent(key: string, value: JsonValue): void {
    if (!this.parent) {
      throw new CtxbusError(
        'conflict',
        `run ${this.runId} is a root run: it has no parent to export ${key} to`,
      );
    }
    this.exports[variableName(key)] = value;
    this.declaredExports.add(key);
    this.parent.set(key, value);
  }

  /** The whole step history as one line per step (summarized steps first). */
  describeHistory(): string[] {
    const lines: string[] = [];
    if (this.summarized) {
      const { steps, byStatus, from, to } = this.summarized;
      lines.push(
        `${steps} earlier steps (${byStatus.completed} completed, ${byStatus.failed} failed, ${byStatus.skipped} skipped) ${from}..${to}`,
      );
    }
    for (const step of this.stepHistory) {
      lines.push(`${step.name}: ${step.status}${step.note ? ` (${step.note})` : ''}`);
    }
    return lines;
  }
}

/** Starts a root run. */
export function createRunContext(options: RunContextOptions): RunContext {
  return new RunContext(options);
}
