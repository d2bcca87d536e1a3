import { PersistentResources } from '@ctxbus/client';
import type { JsonValue, ResourceView } from '@ctxbus/core/contract';
import {
  CtxbusError,
  LIMITS,
  RESOURCE_TYPES,
  resourceNameSchema,
  resourceOf,
  resourceTypeSchema,
  resourceViewSchema,
  sliceText,
  visibilitySchema,
} from '@ctxbus/core/contract';
import { z } from 'zod';
import type { ToolContext } from './tool-context.js';
import { defineTool } from './tool-definition.js';
import { tagsInput } from './tool-inputs.js';

export const RESOURCE_MANAGE_TOOL = 'resource_manage';

const ACTIONS = ['get', 'put', 'add', 'update', 'list', 'delete'] as const;
type Action = (typeof ACTIONS)[number];

const nameInput = resourceNameSchema.describe(
  'The resource name: a path like "runbooks/deploy", "routines/release", "apis/github".',
);

export const resourceManageInput = z.object({
  action: z
    .enum(ACTIONS)
    .describe(
      'get, put (create or replace), add (create; refused if the name exists), update (change; refused if it does not), list, delete.',
    ),
  name: nameInput.optional(),
  value: z
    .unknown()
    .optional()
    .describe(
      `The content: text or any JSON, at most ${LIMITS.contentChars.toLocaleString('en-US')} characters (JSON counted as written).`,
    ),
  type: resourceTypeSchema
    .optional()
    .describe(
      `What it is: ${RESOURCE_TYPES.join(', ')} (default note). With list: only this type.`,
    ),
  title: z
    .string()
    .trim()
    .min(1)
    .max(LIMITS.titleChars)
    .optional()
    .describe('One line saying what it is.'),
  tags: tagsInput.optional(),
  visibility: visibilitySchema
    .optional()
    .describe('"team" (default) or "private" (only your runtime). An update keeps the one it had.'),
  prefix: z
    .string()
    .regex(
      /^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/,
      'a prefix is a name path, e.g. runbooks',
    )
    .optional()
    .describe('list: only names at or under this path.'),
  query: z
    .string()
    .trim()
    .min(1)
    .max(1_000)
    .optional()
    .describe('list: ranked search instead of newest first.'),
  limit: z.int().min(1).max(100).optional().describe('list: at most this many (default 20).'),
});
type ResourceArguments = z.output<typeof resourceManageInput>;

export const resourceManageOutput = z.object({
  action: z.enum(ACTIONS),
  resource: resourceViewSchema
    .optional()
    .describe('get, put, add, update: the resource as stored.'),
  resources: z
    .array(resourceViewSchema)
    .optional()
    .describe('list: newest first, or best first with query.'),
  removed: z.boolean().optional().describe('delete: true once it is gone.'),
});

const WRITE_OPTIONS = ['type', 'title', 'tags', 'visibility'] as const;

/** What each action needs and takes, and a call to show when it is given something else. */
const FORMS: Record<Action, { needs: string[]; takes: readonly string[]; example: string }> = {
  get: { needs: ['name'], takes: [], example: '{"action": "get", "name": "runbooks/deploy"}' },
  put: {
    needs: ['name', 'value'],
    takes: WRITE_OPTIONS,
    example:
      '{"action": "put", "name": "runbooks/deploy", "value": "1. tag 2. publish", "type": "note"}',
  },
  add: {
    needs: ['name', 'value'],
    takes: WRITE_OPTIONS,
    example:
      '{"action": "add", "name": "routines/release", "value": {"steps": ["tag"]}, "type": "routine"}',
  },
  update: {
    needs: ['name'],
    takes: ['value', ...WRITE_OPTIONS],
    example:
      '{"action": "update", "name": "runbooks/deploy", "value": "1. tag 2. build 3. publish"}',
  },
  list: {
    needs: [],
    takes: ['type', 'prefix', 'query', 'limit'],
    example: '{"action": "list", "type": "routine"}',
  },
  delete: { needs: ['name'], takes: [], example: '{"action": "delete", "name": "drafts/plan"}' },
};

function invalid(message: string): CtxbusError {
  return new CtxbusError('validation_failed', message);
}

/** Refuses arguments the action does not take or lacks, naming the form it does take. */
function checkForm(input: ResourceArguments): void {
  const form = FORMS[input.action];
  const given = Object.entries(input).flatMap(([name, value]) =>
    name === 'action' || value === undefined ? [] : [name],
  );
  const stray = given.filter((name) => !form.needs.includes(name) && !form.takes.includes(name));
  const accepted = [...form.needs, ...form.takes].join(', ') || 'nothing else';
  const usage = `resource_manage ${input.action} takes ${accepted}, e.g. ${form.example}`;
  if (stray.length > 0)
    throw invalid(`${stray.join(', ')} do not go with ${input.action}: ${usage}`);
  const missing = form.needs.filter((name) => !given.includes(name));
  if (missing.length > 0) throw invalid(`${input.action} needs ${missing.join(' and ')}: ${usage}`);
  if (input.action === 'update' && given.length === 1) throw invalid(`nothing to update: ${usage}`);
  if (input.value !== undefined) {
    const length =
      typeof input.value === 'string'
        ? input.value.length
        : (JSON.stringify(input.value)?.length ?? 0);
    if (length > LIMITS.contentChars) {
      throw invalid(
        `value is ${length.toLocaleString('en-US')} characters${typeof input.value === 'string' ? '' : ' as JSON'}; a resource holds at most ${LIMITS.contentChars.toLocaleString('en-US')}`,
      );
    }
  }
  if (input.query !== undefined && input.prefix !== undefined) {
    throw invalid('list takes query or prefix, not both (a search covers every name)');
  }
}

const cut = (text: string, chars: number) =>
  text.length > chars ? `${sliceText(text, chars)}…` : text;

function resourceLine(resource: ResourceView, valueChars = 300): string {
  const head = `${resource.name} (${resource.type ?? 'untyped'}, ${resource.visibility}, by ${resource.createdBy} at ${resource.createdAt}): ${resource.title}`;
  const value =
    typeof resource.value === 'string' ? resource.value : JSON.stringify(resource.value);
  return `${head}\n  ${cut(value ?? 'null', valueChars)}`;
}

function notFound(name: string, doing: string): CtxbusError {
  return new CtxbusError(
    'not_found',
    `no resource ${name} to ${doing} (or it is not visible to you)`,
    {
      details: { name },
    },
  );
}

/** The actions, over the team's resources as the caller sees them. */
class ResourceActions {
  constructor(private readonly resources: PersistentResources) {}

  async get(name: string) {
    const resource = await this.resources.read(name);
    if (!resource) throw notFound(name, 'get');
    return {
      structured: { action: 'get' as const, resource },
      text: resourceLine(resource, 4_000),
    };
  }

  async write(input: ResourceArguments & { name: string }) {
    const action = input.action as 'put' | 'add' | 'update';
    const value =
      input.value !== undefined ? input.value : (await this.resources.read(input.name))?.value;
    const item = await this.resources.put(input.name, value as JsonValue, {
      ...(input.type !== undefined && { type: input.type }),
      ...(input.title !== undefined && { title: input.title }),
      ...(input.tags !== undefined && { tags: input.tags }),
      ...(input.visibility !== undefined && { visibility: input.visibility }),
      ...(action !== 'put' && {
        expect: action === 'add' ? ('new' as const) : ('existing' as const),
      }),
    });
    const resource = resourceOf(item) as ResourceView;
    const verb = item.supersedes ? 'Updated' : 'Stored';
    return { structured: { action, resource }, text: `${verb} ${resourceLine(resource)}` };
  }

  async list(input: ResourceArguments) {
    const limit = input.limit ?? 20;
    const resources = input.query
      ? (await this.resources.search(input.query, limit, input.type)).results.flatMap(
          (result) => resourceOf(result.item) ?? [],
        )
      : await this.resources.list({
          limit,
          ...(input.type && { type: input.type }),
          ...(input.prefix && { prefix: input.prefix }),
        });
    const text =
      resources.length === 0 ? 'No resources.' : resources.map((r) => resourceLine(r)).join('\n');
    return { structured: { action: 'list' as const, resources }, text };
  }

  async delete(name: string) {
    if (!(await this.resources.delete(name))) throw notFound(name, 'delete');
    return {
      structured: { action: 'delete' as const, removed: true },
      text: `Deleted ${name} and its history.`,
    };
  }
}

const DESCRIPTION = `The team's persistent resources (seed 004's third layer): what the team will reuse tomorrow, kept until deleted, found by search. Each has a name (a path), a type (note: documentation and findings; routine: a reusable workflow; api-record: an integration's configuration; knowledge: a structured artifact), a title, tags and a JSON or text value.

Examples:
- {"action": "put", "name": "runbooks/deploy", "value": "1. tag vX.Y.Z 2. CI publishes", "type": "note", "title": "How we deploy"}
- {"action": "add", "name": "routines/release", "value": {"steps": ["tag", "publish"]}, "type": "routine"}
- {"action": "update", "name": "runbooks/deploy", "value": "1. tag 2. build 3. publish"} (keeps type, title, tags, visibility)
- {"action": "get", "name": "runbooks/deploy"}
- {"action": "list", "type": "routine"}, {"action": "list", "prefix": "runbooks"}, {"action": "list", "query": "how to deploy"}
- {"action": "delete", "name": "drafts/plan"} (the value and its history)
Never store secrets: they are redacted. For short-lived swarm scratch use update_swarm_shared_state.`;

export function resourceManageTool(context: ToolContext) {
  return defineTool({
    name: RESOURCE_MANAGE_TOOL,
    title: 'Manage persistent resources',
    description: DESCRIPTION,
    input: resourceManageInput,
    output: resourceManageOutput,
    annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: false },
    async run(input) {
      checkForm(input);
      const actions = new ResourceActions(new PersistentResources({ client: context.backend }));
      const name = input.name as string;
      if (input.action === 'get') return actions.get(name);
      if (input.action === 'list') return actions.list(input);
      if (input.action === 'delete') return actions.delete(name);
      return actions.write({ ...input, name });
    },
  });
}
