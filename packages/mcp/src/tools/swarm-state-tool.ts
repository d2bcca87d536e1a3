import { Blackboard } from '@ctxbus/client';
import type { BoardListField, JsonValue, SwarmBlackboard } from '@ctxbus/core/contract';
import {
  BOARD_LIST_FIELD_NAMES,
  blackboardEntryNameSchema,
  boardListValueSchema,
  CtxbusError,
  swarmBlackboardSchema,
} from '@ctxbus/core/contract';
import { z } from 'zod';
import { renderBoard } from './board-text.js';
import type {
  AddArgument,
  NoteArgument,
  RemoveArgument,
  SwarmStateArguments,
} from './swarm-state-input.js';
import { boardRef, noteInput, swarmStateInput } from './swarm-state-input.js';
import type { ToolContext } from './tool-context.js';
import { defineTool } from './tool-definition.js';

export const SWARM_STATE_TOOL = 'update_swarm_shared_state';

export const swarmStateOutput = z.object({
  board: swarmBlackboardSchema.describe("Seed 004's SwarmBlackboard after the change."),
  changes: z.array(z.string()).describe('What this call changed, one line each.'),
});

const DESCRIPTION = `The swarm's blackboard (seed 004): short-lived shared scratch every agent of the team reads and writes: task results, notes, resource ids, created URLs, active routines, completed tasks. Returns the whole board (taskResults, sharedNotes, resourceIds, createdUrls, activeRoutines, completedTasks, lastUpdated, updatedBy); with no change it just reads it. Subscribers of the hub's stream see each change as blackboard-updated.

Examples:
- {"key": "api-base-url", "value": "https://staging.example.com"}: sets an entry (a task result; "kind" says otherwise)
- {"key": "createdUrls", "value": ["https://github.com/acme/app/pull/12"]}: replaces a whole field
- {"add": {"sharedNotes": [{"content": "staging DNS is flaky", "priority": "high", "tags": ["dns"]}], "activeRoutines": ["deploy"]}}
- {"remove": {"activeRoutines": ["deploy"]}, "add": {"completedTasks": ["deploy"]}}
- {"board": "thread:T-42"}: reads a conversation's board
Use add/remove for lists others write too (a replace drops their values). For what should outlive the swarm use resource_manage.`;

function invalid(message: string): CtxbusError {
  return new CtxbusError('validation_failed', message);
}

/**
 * A write the hub refused, its fields named as the call named them: the hub says
 * `body.items[2].content` for the third entry written, the caller wrote `value` or
 * `taskResults.<name>`.
 */
async function named<T>(write: Promise<T>, name: (index: number) => string): Promise<T> {
  try {
    return await write;
  } catch (error) {
    if (!CtxbusError.isInstance(error) || error.code !== 'validation_failed') throw error;
    const message = error.message.replace(
      /\bbody(?:\.items\[(\d+)\])?\.(?:content|title)\b/g,
      (_match, index: string | undefined) => name(Number(index ?? 0)),
    );
    throw new CtxbusError(error.code, message, { details: error.details });
  }
}

/** `value` read with `schema`, or an error naming the form `key` takes. */
function valueFor<T extends z.ZodType>(schema: T, value: unknown, key: string, form: string) {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw invalid(`value: for key "${key}" give ${form}`);
  return parsed.data as z.output<T>;
}

const isListField = (key: string): key is BoardListField =>
  (BOARD_LIST_FIELD_NAMES as string[]).includes(key);

const noteList = z.union([noteInput, z.array(noteInput).max(50)]);
const listValue = z.union([boardListValueSchema, z.array(boardListValueSchema).max(100)]);

/** A note to write: text as its content; a returned note's createdBy and createdAt dropped. */
function asNote(note: NoteArgument) {
  if (typeof note === 'string') return { content: note };
  const { createdBy: _by, createdAt: _at, ...written } = note;
  return written;
}

/** The line reporting a change of a list field: what changed, and whether some values did not. */
function listChange(
  verb: string,
  field: string,
  done: readonly string[],
  asked: readonly string[],
  rest: string,
): string {
  return `${verb} ${field} [${done.join(', ')}]${done.length < asked.length ? ` (the rest ${rest})` : ''}`;
}

/** One call's work on one board, with the lines it reports. */
class BoardUpdate {
  readonly changes: string[] = [];

  constructor(readonly board: Blackboard) {}

  /** Seed 004's `(key, value)`: an entry, or a whole field replaced. */
  async setKey(key: string, value: unknown, kind: SwarmStateArguments['kind']): Promise<void> {
    if (key === 'lastUpdated' || key === 'updatedBy') {
      throw invalid(
        `${key} is kept by the hub (the newest entry's time and writer); set another key`,
      );
    }
    const field = key === 'taskResults' || key === 'sharedNotes' || isListField(key);
    if (field && kind !== undefined)
      throw invalid(`kind goes with an entry key; ${key} is a field`);
    if (key === 'taskResults') return this.replaceResults(value);
    if (key === 'sharedNotes') return this.replaceNotes(value);
    if (isListField(key)) return this.replaceList(key, value);
    const name = blackboardEntryNameSchema.safeParse(key);
    if (!name.success)
      throw invalid(`key: ${name.error.issues[0]?.message ?? 'not an entry name'}`);
    await named(this.board.set(key, value as JsonValue, { kind: kind ?? 'result' }), () => 'value');
    this.changes.push(`set ${key}`);
  }

  private async replaceResults(value: unknown): Promise<void> {
    const form = 'an object of results by entry name, e.g. {"build": {"ok": true}}';
    const results = valueFor(
      z.record(blackboardEntryNameSchema, z.unknown()),
      value,
      'taskResults',
      form,
    );
    // The new results first, in one write: a refused one leaves the board as it was.
    await this.addResults(results);
    const removed = await this.board.removeKindExcept('result', new Set(Object.keys(results)));
    if (removed.length > 0) this.changes.push(`removed taskResults ${removed.join(', ')}`);
  }

  private async replaceNotes(value: unknown): Promise<void> {
    const form = 'a note or a list of notes: text, or {content, tags, priority, id}';
    const parsed = valueFor(noteList, value, 'sharedNotes', form);
    const notes = (Array.isArray(parsed) ? parsed : [parsed]).map(asNote);
    // The new notes first, in one write: a refused one leaves the board as it was.
    const added = await this.addNotes(notes);
    const keep = new Set([...notes.flatMap((note) => note.id ?? []), ...added]);
    const removed = await this.board.removeKindExcept('note', keep);
    if (removed.length > 0) this.changes.push(`removed sharedNotes ${removed.join(', ')}`);
  }

  private async replaceList(field: BoardListField, value: unknown): Promise<void> {
    const parsed = valueFor(listValue, value, field, 'a string or a list of strings');
    const values = Array.isArray(parsed) ? parsed : [parsed];
    await this.board.setList(field, values);
    this.changes.push(`${field} = [${values.join(', ')}]`);
  }

  /** Every result in one atomic write: all of them, or none. */
  private async addResults(results: Record<string, unknown>): Promise<void> {
    const entries = Object.entries(results);
    await named(
      this.board.setMany(
        entries.map(([name, result]) => ({
          name,
          value: result as JsonValue,
          options: { kind: 'result' as const },
        })),
      ),
      (index) => `taskResults.${entries[index]?.[0] ?? index}`,
    );
    for (const [name] of entries) this.changes.push(`set taskResults.${name}`);
  }

  /** Every note in one atomic write; their ids. */
  private async addNotes(notes: readonly ReturnType<typeof asNote>[]): Promise<string[]> {
    if (notes.length === 0) return [];
    const ids = await named(this.board.addNotes(notes), (index) => `sharedNotes[${index}]`);
    this.changes.push(`noted ${ids.join(', ')}`);
    return ids;
  }

  async add(add: AddArgument): Promise<void> {
    if (add.taskResults) await this.addResults(add.taskResults);
    if (add.sharedNotes) await this.addNotes(add.sharedNotes.map(asNote));
    for (const field of BOARD_LIST_FIELD_NAMES) {
      const values = add[field];
      if (!values) continue;
      const added = await this.board.addToList(field, values);
      this.changes.push(listChange('added', field, added, values, 'were there'));
    }
  }

  async remove(remove: RemoveArgument): Promise<void> {
    const named = [
      ...(remove.entries ?? []),
      ...(remove.sharedNotes ?? []),
      ...(remove.taskResults ?? []),
    ];
    for (const name of new Set(named)) {
      const gone = await this.board.remove(name);
      this.changes.push(gone ? `removed ${name}` : `${name} was not on the board`);
    }
    for (const field of BOARD_LIST_FIELD_NAMES) {
      const values = remove[field];
      if (!values) continue;
      const removed = await this.board.removeFromList(field, values);
      this.changes.push(listChange('removed', field, removed, values, 'were not there'));
    }
  }
}

/** Refuses a call whose parts do not go together, naming the form that does. */
function checkForm(input: SwarmStateArguments): void {
  if (input.key !== undefined && input.value === undefined) {
    throw invalid(
      'key needs a value: {"key": "<entry or field>", "value": <JSON>} (to drop an entry: {"remove": {"entries": ["<name>"]}})',
    );
  }
  if (input.key === undefined && (input.value !== undefined || input.kind !== undefined)) {
    throw invalid('value and kind go with key: {"key": "<entry or field>", "value": <JSON>}');
  }
}

async function applyUpdate(update: BoardUpdate, input: SwarmStateArguments): Promise<void> {
  if (input.key !== undefined) await update.setKey(input.key, input.value, input.kind);
  if (input.add) await update.add(input.add);
  if (input.remove) await update.remove(input.remove);
}

export function swarmStateTool(context: ToolContext) {
  return defineTool({
    name: SWARM_STATE_TOOL,
    title: 'Update the swarm blackboard',
    description: DESCRIPTION,
    input: swarmStateInput,
    output: swarmStateOutput,
    annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
    async run(input) {
      checkForm(input);
      const board = new Blackboard({
        client: context.backend,
        board: boardRef(input.board),
        ...(input.visibility !== undefined && { visibility: input.visibility }),
      });
      const update = new BoardUpdate(board);
      await applyUpdate(update, input);
      const state: SwarmBlackboard = await board.state();
      return {
        structured: { board: state, changes: update.changes },
        text: renderBoard(state, update.changes),
      };
    },
  });
}
