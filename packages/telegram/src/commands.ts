import type { TaskState } from '@ctxbus/core';
import { tagSchema } from '@ctxbus/core';
import { stableId } from '@ctxbus/core/light';
import type { Context } from 'grammy';
import { Composer } from 'grammy';
import { approverRefusal } from './approvers.js';
import type { BotDeps } from './bot-deps.js';
import { itemLine, taskLine } from './format.js';
import { readPriorities } from './priorities.js';

export const DEFAULT_DIGEST_INTERVAL_MS = 10 * 60_000;

export const BOT_COMMANDS = [
  { command: 'context', description: "the team's shared context" },
  { command: 'tasks', description: 'active tasks and their state' },
  { command: 'search', description: 'search the context: /search <words>' },
  { command: 'decide', description: 'record a decision (approvers): /decide <text>' },
  { command: 'priorities', description: "the team's priorities (shared-context/priorities.md)" },
  { command: 'watch', description: 'push only these tags: /watch <tag> ... | /watch all' },
  { command: 'help', description: 'what this bot does' },
] as const;

const ACTIVE_STATES: TaskState[] = ['SUBMITTED', 'WORKING', 'INPUT_REQUIRED', 'AUTH_REQUIRED'];

/** What the commands read of the bot's options. */
export interface CommandOptions {
  digestIntervalMs?: number;
  sharedContextDir?: string;
  approvers?: readonly number[];
}

/** The bot's commands (BOT_COMMANDS), then a pointer to /help for any other text. */
export function commandsComposer(deps: BotDeps, options: CommandOptions): Composer<Context> {
  const commands = new Composer<Context>();
  commands.command('help', (ctx) => deps.reply(ctx, helpText(options)));
  commands.command('start', (ctx) => deps.reply(ctx, helpText(options)));
  commands.command('context', (ctx) =>
    guard(deps, ctx, async () => {
      const bundle = await deps.client.shared({ runtime: 'openclaw' });
      return bundle.formatted.trim() || 'The shared context is empty.';
    }),
  );
  commands.command('tasks', (ctx) =>
    guard(deps, ctx, async () => {
      const { tasks } = await deps.client.tasks({
        state: ACTIVE_STATES,
        order: 'newest',
        limit: 50,
      });
      if (tasks.length === 0) return 'No active tasks.';
      return [`Active tasks (${tasks.length}):`, ...tasks.map(taskLine)].join('\n');
    }),
  );
  commands.command('search', (ctx) =>
    guard(deps, ctx, async () => {
      const query = ctx.match.trim();
      if (!query) return 'Usage: /search <words>';
      const { results } = await deps.client.search({ query, limit: 10 });
      if (results.length === 0) return `Nothing found for "${query}".`;
      return [`Found ${results.length}:`, ...results.map((r) => itemLine(r.item))].join('\n');
    }),
  );
  // A decision is what every agent of the team reads as decided: only the bot's approvers
  // record one, as only they tap Approve (anyone who can post in a served group could
  // otherwise plant one).
  const approvers = new Set(options.approvers ?? []);
  commands.command('decide', (ctx) =>
    guard(deps, ctx, async () => {
      const from = ctx.from?.id;
      const refused = approverRefusal(approvers, from);
      if (refused === 'no_approver_configured') {
        return 'Not recorded: no approver is configured (ctxbus telegram --approver USER_ID).';
      }
      if (refused === 'not_an_approver') {
        return `Not recorded: user ${from ?? '?'} is not one of this bot's approvers.`;
      }
      const text = ctx.match.trim();
      if (!text) return 'Usage: /decide <the decision>';
      const title = text.split('\n')[0]?.slice(0, 300) ?? text;
      const written = await deps.client.write({
        id: stableId('ctxbus-telegram-decide', String(ctx.chat?.id), String(ctx.msg?.message_id)),
        type: 'decision',
        title,
        content: text,
        relevanceTags: ['telegram'],
        // Who wrote it, always: a Telegram user id when there is no username.
        runtimeOptions: {
          telegram: {
            chatId: ctx.chat?.id ?? null,
            from: ctx.from?.username ?? null,
            fromId: ctx.from?.id ?? null,
          },
        },
      });
      return `Decision recorded: ${title} (${written.results[0]?.id ?? '?'})`;
    }),
  );
  commands.command('priorities', (ctx) =>
    guard(deps, ctx, async () => {
      const dir = options.sharedContextDir;
      if (!dir) return 'No shared-context directory is configured (--shared-context-dir).';
      const text = await readPriorities(dir);
      if (text === null) return `No priorities.md in ${dir}.`;
      return text || 'priorities.md has no canonical section yet.';
    }),
  );
  commands.command('watch', (ctx) =>
    guard(deps, ctx, async () => {
      const chat = deps.chatState(ctx.chat.id);
      const words = ctx.match.split(/[\s,]+/).filter(Boolean);
      if (words.length === 0) {
        return chat.watch.length === 0
          ? 'Pushing everything (blocking items at once, attention items in the digest).'
          : `Pushing only items tagged: ${chat.watch.join(', ')} (approvals always).`;
      }
      if (words.length === 1 && ['all', 'off', 'none', '*'].includes(words[0] ?? '')) {
        chat.watch = [];
      } else {
        const bad = words.find((word) => !tagSchema.safeParse(word).success);
        if (bad !== undefined) return `Not a tag: ${bad}`;
        chat.watch = [...new Set(words.map((word) => word.replace(/^#/, '')))];
      }
      await deps.state.save();
      return chat.watch.length === 0
        ? 'Watching everything again.'
        : `Now pushing only items tagged: ${chat.watch.join(', ')} (approvals always).`;
    }),
  );
  commands.on('message:text', (ctx) =>
    deps.reply(ctx, 'Unknown command. /help lists what I can do.'),
  );
  return commands;
}

/** Runs a command; a hub error becomes a short reply (the token never shows). */
async function guard(deps: BotDeps, ctx: Context, work: () => Promise<string>): Promise<void> {
  let text: string;
  try {
    text = await work();
  } catch (error) {
    deps.logger.error({ error: deps.redact(error) }, 'command failed');
    text = `Sorry: ${deps.redact(error)}`;
  }
  await deps.reply(ctx, text);
}

function helpText(options: CommandOptions): string {
  const minutes = Math.round((options.digestIntervalMs ?? DEFAULT_DIGEST_INTERVAL_MS) / 60_000);
  return [
    "ctxbus: your team's shared context, urgent items and approvals.",
    '',
    ...BOT_COMMANDS.map((c) => `/${c.command} - ${c.description}`),
    '',
    `Blocking items arrive at once; attention items in a digest every ${minutes} min.`,
    'Approvals come with buttons: Allow once (this exact command, this task only) or Deny.',
    'Conflicts (two runtimes wrote one key differently) come with Keep 1 / Keep 2 buttons.',
    options.approvers && options.approvers.length > 0
      ? 'Only the approvers this bot was started with may tap them or /decide.'
      : 'No approver is configured: taps and /decide decide nothing (ctxbus telegram --approver USER_ID).',
  ].join('\n');
}
