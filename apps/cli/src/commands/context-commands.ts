import type { CtxbusClient, ListParams } from '@ctxbus/client';
import type { ListResponse, WriteResponse } from '@ctxbus/core/contract';
import { CtxbusError, hubUnreachable } from '@ctxbus/core/light';
import type { Command } from 'commander';
import { itemLine, oneLine, printJson, printLine, terminalSafe } from '../output.js';
import { readInput } from '../read-input.js';

interface ConnectionOptions {
  url?: string;
  token?: string;
  json?: boolean;
}

/** The hub's client; loaded when a command runs, so `--help` loads no client or zod. */
async function connect(options: ConnectionOptions): Promise<CtxbusClient> {
  const [{ createClient }, { hubUrl, runtimeToken }] = await Promise.all([
    import('@ctxbus/client'),
    import('../hub-target.js'),
  ]);
  const url = hubUrl(options.url);
  return createClient({ url, token: runtimeToken(url, options.token) });
}

function withConnection(command: Command): Command {
  return command
    .option('--url <url>', 'hub URL (default: $CTXBUS_URL, else the hub saved by ctxbus serve)')
    .option(
      '--token <token>',
      'runtime token (default: $CTXBUS_TOKEN, else the one saved by token create --save)',
    )
    .option('--json', 'print JSON');
}

function integer(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value))
    throw new CtxbusError('validation_failed', `${flag} must be a whole number (got "${value}")`);
  return Number(value);
}

interface WriteOptions extends ConnectionOptions {
  file?: string;
  type?: string;
  title?: string;
  content?: string;
  contentFile?: string;
  summary?: string;
  scope?: string;
  scopeKey?: string;
  tags?: string;
  urgency?: string;
  private?: boolean;
  ttl?: string;
  expiresAt?: string;
  supersedes?: string;
  key?: string;
  id?: string;
  task?: string;
  thread?: string;
  agent?: string;
}

/** How long a write waits for the hub's answer. */
const WRITE_TIMEOUT_MS = 30_000;

/** How a message names `--file`'s argument (`-`: stdin). */
const fileName = (file: string) => (file === '-' ? 'stdin' : file);

/**
 * The items of a JSON file: one item, an array, or `{"items": [...]}` (the hub's write body),
 * each checked by the hub.
 */
async function itemsFromFile(file: string): Promise<unknown[]> {
  const text = await readInput(file);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    if (CtxbusError.isInstance(error)) throw error;
    // JSON.parse quotes the text it read, line breaks and all: one line.
    throw new CtxbusError('bad_json', `${fileName(file)}: ${oneLine((error as Error).message)}`);
  }
  if (Array.isArray(json)) return json;
  const items = (json as { items?: unknown } | null)?.items;
  if (json !== null && typeof json === 'object' && Array.isArray(items)) return items;
  return [json];
}

/**
 * A refusal of items from a file names their fields as the file spells them (`stdin, item 1:
 * type: …`), not as the flags a person did not type (`--type: …`).
 */
function inFile(error: unknown, file: string): unknown {
  if (!CtxbusError.isInstance(error) || error.code !== 'validation_failed') return error;
  const message = error.message.replace(
    /\bbody\.items\[(\d+)\]\.?/g,
    (_match, index: string) => `${fileName(file)}, item ${Number(index) + 1}: `,
  );
  return new CtxbusError('validation_failed', message, { details: error.details });
}

/** Builds the item from flags; the hub validates it (and names any bad field). */
async function itemFromFlags(options: WriteOptions): Promise<Record<string, unknown>> {
  if (!options.type || !options.title) {
    throw new CtxbusError(
      'validation_failed',
      'write needs --type and a title, e.g. ctxbus write --type discovery "the title" (or --file with JSON items)',
    );
  }
  if (options.content !== undefined && options.contentFile !== undefined) {
    throw new CtxbusError('validation_failed', 'give --content or --content-file, not both');
  }
  const content =
    options.contentFile !== undefined ? await readInput(options.contentFile) : options.content;
  const source = {
    ...(options.task && { taskId: options.task }),
    ...(options.thread && { threadId: options.thread }),
    ...(options.agent && { agentId: options.agent }),
  };
  const ttl = integer(options.ttl, '--ttl');
  return {
    type: options.type,
    title: options.title,
    ...(content !== undefined && { content }),
    ...(options.summary && { summary: options.summary }),
    ...(options.scope && { scope: options.scope }),
    ...(options.scopeKey && { scopeKey: options.scopeKey }),
    ...(options.tags && {
      relevanceTags: options.tags
        .split(',')
        .map((tag) => tag.trim())
        .filter(Boolean),
    }),
    ...(options.urgency && { urgency: options.urgency }),
    ...(options.private && { visibility: 'private' }),
    ...(ttl !== undefined && { expiresAfterSeconds: ttl }),
    ...(options.expiresAt && { expiresAt: options.expiresAt }),
    ...(options.supersedes && { supersedes: options.supersedes }),
    ...(options.key && { key: options.key }),
    ...(options.id && { id: options.id }),
    ...(Object.keys(source).length > 0 && { source }),
  };
}

function listParams(options: Record<string, string | boolean | undefined>): ListParams {
  const limit = integer(options.limit as string | undefined, '--limit');
  return {
    ...(options.scope !== undefined && { scope: String(options.scope) }),
    ...(options.scopeKey !== undefined && { scopeKey: String(options.scopeKey) }),
    ...(options.type !== undefined && { type: String(options.type) }),
    ...(options.tags !== undefined && { tags: String(options.tags) }),
    ...(options.minUrgency !== undefined && { minUrgency: String(options.minUrgency) }),
    ...(options.runtime !== undefined && { runtime: String(options.runtime) }),
    ...(options.since !== undefined && { since: String(options.since) }),
    ...(options.keyPrefix !== undefined && { keyPrefix: String(options.keyPrefix) }),
    ...(options.key !== undefined && { key: String(options.key) }),
    ...(options.unconsumed === true && { unconsumed: true }),
    ...(limit !== undefined && { limit }),
  };
}

/**
 * The first `limit` items: the hub ends a page early when its items' text is large (about
 * 4 Mi characters a page), so this pages on until `limit` or the last item.
 */
async function listUpTo(
  client: Pick<CtxbusClient, 'list'>,
  params: ListParams,
): Promise<ListResponse> {
  const limit = params.limit ?? 50;
  const first = await client.list(params);
  const items = [...first.items];
  let { totalTokens, nextBefore } = first;
  while (items.length < limit && nextBefore !== null) {
    const page = await client.list({ ...params, before: nextBefore, limit: limit - items.length });
    if (page.items.length === 0) break;
    items.push(...page.items);
    totalTokens += page.totalTokens;
    nextBefore = page.nextBefore;
  }
  return { items, totalTokens, nextBefore };
}

interface SearchOptions extends ConnectionOptions {
  limit?: string;
  type?: string;
  scope?: string;
}

interface WatchOptions extends ConnectionOptions {
  scope?: string;
  scopeKey?: string;
  type?: string;
  tags?: string;
  minUrgency?: string;
  since?: string;
}

type Run = (action: () => Promise<void>) => Promise<void>;

export function registerContextCommands(program: Command, run: Run): void {
  writeCommand(program, run);
  readCommand(program, run);
  getCommand(program, run);
  searchCommand(program, run);
  sharedCommand(program, run);
  consumeCommand(program, run);
  watchCommand(program, run);
}

/** `ctxbus write`: one item from flags, or items from a JSON file, through the light path. */
function writeCommand(program: Command, run: Run): void {
  withConnection(
    program
      .command('write')
      .description('write a context item (flags), or items from JSON (--file)')
      .argument('[title]', 'the one-line title (or --title)')
      .option('-f, --file <path>', 'JSON: one item, an array, or {"items": [...]}; - reads stdin')
      .option('-t, --type <type>', 'discovery | decision | status | request | alert')
      .option('--title <title>', 'one-line title')
      .option('-c, --content <text>', 'the body text')
      .option('--content-file <path>', 'read the body from a file (- = stdin)')
      .option('--summary <text>', 'one-line summary (derived from the content when absent)')
      .option('--scope <scope>', 'task | thread | space | global (default global)')
      .option('--scope-key <key>', 'user:<id> | team:<id> | task:<id> | thread:<id>')
      .option('--tags <tags>', 'comma-separated relevance tags')
      .option('-u, --urgency <urgency>', 'background | attention | blocking')
      .option('--private', 'visible only to this runtime')
      .option('--ttl <seconds>', 'expire after this many seconds')
      .option('--expires-at <iso>', 'expire at this time')
      .option('--supersedes <id>', 'the item this one replaces')
      .option(
        '--key <key>',
        'knowledge key (project/x/y); writing it again supersedes the old item',
      )
      .option('--id <uuid>', 'your own id, making retries idempotent')
      .option('--task <id>', 'source task id')
      .option('--thread <id>', 'source thread id')
      .option('--agent <id>', 'source agent id'),
  ).action((title: string | undefined, options: WriteOptions) =>
    run(async () => {
      if (title !== undefined && options.title !== undefined) {
        throw new CtxbusError(
          'validation_failed',
          'give the title once: as an argument or --title',
        );
      }
      if (options.file !== undefined) {
        // The file holds whole items: a flag beside it would be dropped without a word.
        const item = ITEM_FLAGS.filter((flag) => options[flag.key] !== undefined);
        if (title !== undefined || item.length > 0) {
          const named = [...(title !== undefined ? ['a title'] : []), ...item.map((f) => f.name)];
          throw new CtxbusError(
            'validation_failed',
            `--file holds whole items: give ${named.join(', ')} in the file, not beside it`,
          );
        }
      }
      await writeItems({ ...options, title: options.title ?? title });
    }),
  );
}

/** The flags that make an item from the command line: none goes with --file. */
const ITEM_FLAGS: { key: keyof WriteOptions; name: string }[] = [
  { key: 'type', name: '--type' },
  { key: 'title', name: '--title' },
  { key: 'content', name: '--content' },
  { key: 'contentFile', name: '--content-file' },
  { key: 'summary', name: '--summary' },
  { key: 'scope', name: '--scope' },
  { key: 'scopeKey', name: '--scope-key' },
  { key: 'tags', name: '--tags' },
  { key: 'urgency', name: '--urgency' },
  { key: 'private', name: '--private' },
  { key: 'ttl', name: '--ttl' },
  { key: 'expiresAt', name: '--expires-at' },
  { key: 'supersedes', name: '--supersedes' },
  { key: 'key', name: '--key' },
  { key: 'id', name: '--id' },
  { key: 'task', name: '--task' },
  { key: 'thread', name: '--thread' },
  { key: 'agent', name: '--agent' },
];

/**
 * The light path (node:http, no client or zod): a write is one request, and the hub validates
 * every item and names any bad field.
 */
async function writeItems(options: WriteOptions): Promise<void> {
  const items =
    options.file === undefined ? [await itemFromFlags(options)] : await itemsFromFile(options.file);
  const [{ hubRequest, LITE_ROUTES }, { hubUrl, runtimeToken }] = await Promise.all([
    import('@ctxbus/client/light'),
    import('../hub-target.js'),
  ]);
  const url = hubUrl(options.url);
  const { method, path } = LITE_ROUTES.writeContext;
  const response = (await hubRequest(
    { url, token: runtimeToken(url, options.token), timeoutMs: WRITE_TIMEOUT_MS },
    method,
    path,
    { items },
  ).catch((error: unknown) => {
    throw options.file === undefined ? error : inFile(error, options.file);
  })) as WriteResponse;
  if (options.json) printJson(response);
  else {
    for (const [index, result] of response.results.entries()) {
      const item = response.items[index];
      const redacted = item?.redactions.length
        ? ` (redacted: ${item.redactions.map((r) => r.kind).join(', ')})`
        : '';
      printLine(`${result.status} ${result.id} seq ${result.seq}${redacted}`);
    }
  }
}

/** `ctxbus read`: items, newest first, by the list filters. */
function readCommand(program: Command, run: Run): void {
  withConnection(
    program
      .command('read')
      .description('list items, newest first')
      .option('--scope <scopes>', 'comma-separated scopes')
      .option('--scope-key <key>', 'exact scope key')
      .option('-t, --type <types>', 'comma-separated types')
      .option('--tags <tags>', 'comma-separated tags (any)')
      .option('--min-urgency <urgency>', 'background, attention or blocking')
      .option('--runtime <runtime>', 'only items written by this runtime')
      .option(
        '--since <seq|date>',
        'after this sequence number, date (YYYY-MM-DD, UTC) or ISO time',
      )
      .option('--key <key>', 'knowledge key')
      .option('--key-prefix <prefix>', 'knowledge keys under this prefix')
      .option('--unconsumed', 'only items no runtime consumed yet')
      .option('-n, --limit <n>', 'at most this many (default 50, max 500)'),
  ).action((options: ConnectionOptions & Record<string, string | boolean | undefined>) =>
    run(async () => {
      const response = await listUpTo(await connect(options), listParams(options));
      if (options.json) printJson(response);
      else if (response.items.length === 0) printLine('no items');
      else for (const item of response.items) printLine(itemLine(item));
    }),
  );
}

/** `ctxbus get <id>`: one item and its content. */
function getCommand(program: Command, run: Run): void {
  withConnection(
    program.command('get').description('show one item').argument('<id>', 'item id'),
  ).action((id: string, options: ConnectionOptions) =>
    run(async () => {
      const item = await (await connect(options)).get(id);
      if (options.json) printJson(item);
      else {
        printLine(itemLine(item));
        if (item.content) printLine(`\n${item.content}`);
      }
    }),
  );
}

/** `ctxbus search <query...>`: ranked results, and whether vectors were used. */
function searchCommand(program: Command, run: Run): void {
  withConnection(
    program
      .command('search')
      .description(
        'ranked search: full text, or hybrid when the hub has embeddings; plain questions work',
      )
      .argument('<query...>', 'words or a question')
      .option('-n, --limit <n>', 'at most this many (default 10, max 100)')
      .option('-t, --type <types>', 'comma-separated types')
      .option('--scope <scopes>', 'comma-separated scopes'),
  ).action((words: string[], options: SearchOptions) => run(() => searchItems(words, options)));
}

/** Prints the ranked results (more digits for hybrid scores) and how the hub searched. */
async function searchItems(words: string[], options: SearchOptions): Promise<void> {
  const limit = integer(options.limit, '--limit');
  const response = await (await connect(options)).search({
    query: words.join(' '),
    ...(limit !== undefined && { limit }),
    ...(options.type && { type: options.type.split(',') as never }),
    ...(options.scope && { scope: options.scope.split(',') as never }),
  });
  if (options.json) printJson(response);
  else if (response.results.length === 0) printLine('no results');
  else {
    // Fused scores are small (reciprocal ranks): more digits keep them apart.
    const digits = response.mode === 'hybrid' ? 4 : 2;
    for (const result of response.results) {
      printLine(`${result.score.toFixed(digits)}  ${itemLine(result.item)}`);
      // The hub marks the matched words in Markdown (**word**); a terminal shows them in brackets.
      const excerpt = result.highlight.replace(/\*\*(.+?)\*\*/g, '[$1]').replace(/\s+/g, ' ');
      printLine(`      ${excerpt}`);
    }
  }
  if (!options.json && response.vector) {
    printLine(
      response.vector.used
        ? `(hybrid: full text and ${response.vector.model} vectors)`
        : `(full text only: ${response.vector.reason ?? 'vectors not used'})`,
    );
  }
}

/** `ctxbus shared`: the team's bundle, formatted for a runtime. */
function sharedCommand(program: Command, run: Run): void {
  withConnection(
    program
      .command('shared')
      .description(
        'the shared context bundle, formatted for a runtime (a look: not an injection in ctxbus analytics)',
      )
      .option(
        '-r, --runtime <runtime>',
        "claude-code | openclaw | codex | web, or any runtime: the format capabilities.yaml gives it, else the default (default: the token's runtime)",
      )
      .option('-b, --budget <tokens>', "token budget (default: the runtime's)"),
  ).action((options: ConnectionOptions & { runtime?: string; budget?: string }) =>
    run(async () => {
      const tokenBudget = integer(options.budget, '--budget');
      const bundle = await (await connect(options)).shared({
        preview: true,
        ...(options.runtime && { runtime: options.runtime }),
        ...(tokenBudget !== undefined && { tokenBudget }),
      });
      if (options.json) {
        printJson(bundle);
        return;
      }
      printLine(bundle.formatted);
      // Beside the bundle (stdout stays the bundle): what the budget cut, and the format's say.
      const { trim } = bundle;
      const tokens = (n: number) => `${n} token${n === 1 ? '' : 's'}`;
      if (trim.trimmed && bundle.formatted.trim() === '') {
        process.stderr.write(
          `ctxbus: nothing fits a budget of ${tokens(bundle.tokenBudget)} (the bundle is ${trim.tokensBeforeTrim}); pass a larger --budget\n`,
        );
      } else if (trim.trimmed) {
        process.stderr.write(
          `ctxbus: cut to fit ${tokens(bundle.tokenBudget)} (${trim.tokensBeforeTrim} before); a larger --budget shows more\n`,
        );
      }
      for (const warning of bundle.warnings) {
        process.stderr.write(`ctxbus: warning: ${terminalSafe(oneLine(warning.message))}\n`);
      }
    }),
  );
}

/** `ctxbus consume <id>`: marks an item consumed by this runtime. */
function consumeCommand(program: Command, run: Run): void {
  withConnection(
    program
      .command('consume')
      .description('mark an item consumed by this runtime')
      .argument('<id>', 'item id'),
  ).action((id: string, options: ConnectionOptions) =>
    run(async () => {
      const item = await (await connect(options)).consume(id);
      if (options.json) printJson(item);
      else
        printLine(
          `consumed ${item.id} (by ${item.consumedBy.map((entry) => entry.runtime).join(', ')})`,
        );
    }),
  );
}

/** `ctxbus watch`: live changes until Ctrl-C. */
function watchCommand(program: Command, run: Run): void {
  withConnection(
    program
      .command('watch')
      .description(
        'tail live changes (once connected, reconnects and resumes by itself); Ctrl-C stops; a hub that never answers is exit 6',
      )
      .option('--scope <scopes>', 'comma-separated scopes')
      .option('--scope-key <key>', 'exact scope key')
      .option('-t, --type <types>', 'comma-separated types')
      .option('--tags <tags>', 'comma-separated tags (any)')
      .option('--min-urgency <urgency>', 'background, attention or blocking')
      .option('--since <seq>', 'replay changes after this sequence first'),
  ).action((options: WatchOptions) => run(() => watchChanges(options)));
}

/** Prints each change until Ctrl-C (SIGINT or SIGTERM ends the stream). */
async function watchChanges(options: WatchOptions): Promise<void> {
  const client = await connect(options);
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const since = integer(options.since, '--since');
  // Until the first connection, a failure is the answer (no hub there); after it, a lost
  // connection is resumed.
  let live = false;
  let neverConnected: unknown = null;
  // A hub that takes the connection and never answers is no hub either (exit 6, as read's).
  const silence = setTimeout(() => {
    if (live) return;
    neverConnected = hubUnreachable(client.url, new Error(`no answer in ${FIRST_ANSWER_MS} ms`));
    controller.abort();
  }, FIRST_ANSWER_MS);
  const stream = client.stream({
    ...(options.scope && { scope: options.scope }),
    ...(options.scopeKey && { scopeKey: options.scopeKey }),
    ...(options.type && { type: options.type }),
    ...(options.tags && { tags: options.tags }),
    ...(options.minUrgency && { minUrgency: options.minUrgency }),
    ...(since !== undefined && { since }),
    signal: controller.signal,
    onReady: () => {
      live = true;
      process.stderr.write(`watching ${client.url} (Ctrl-C to stop)\n`);
    },
    onReconnect: (error) => {
      if (!live) {
        neverConnected = error;
        controller.abort();
        return;
      }
      process.stderr.write(`connection lost (${(error as Error).message}); reconnecting\n`);
    },
  });
  try {
    for await (const event of stream) {
      if (options.json) printLine(JSON.stringify(event));
      else printLine(`${event.event.replace('context-', '')}: ${itemLine(event.item)}`);
    }
  } finally {
    clearTimeout(silence);
  }
  if (neverConnected !== null) throw neverConnected;
}

/** How long `watch` waits for the hub's first answer (as any other command's request). */
const FIRST_ANSWER_MS = 10_000;
