import { mkdir, open, readFile, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
import { CtxbusError } from '@ctxbus/core';
import { z } from 'zod';

// What the bot must not forget across restarts, per chat: the last hub sequence whose push
// Telegram accepted (so a restart neither drops nor repeats one), the attention items waiting
// for the next digest, and the chat's /watch tags. Written whole to a temporary file, synced,
// then renamed over the old one: a crash leaves the old state or the new, never half of one.

export const digestEntrySchema = z.object({
  seq: z.int().positive(),
  id: z.string(),
  type: z.string(),
  title: z.string(),
  summary: z.string(),
  urgency: z.string(),
  runtime: z.string(),
  tags: z.array(z.string()),
  createdAt: z.string(),
});
export type DigestEntry = z.infer<typeof digestEntrySchema>;

export const chatStateSchema = z.object({
  /** The last hub sequence handled for this chat (pushed, queued for the digest, or skipped). */
  lastSeq: z.int().nonnegative(),
  /** Push only items with one of these tags (empty: everything). */
  watch: z.array(z.string()).default([]),
  digest: z.array(digestEntrySchema).default([]),
});
export type ChatState = z.infer<typeof chatStateSchema>;

/**
 * A message the bot sent with buttons: its chat and message id, and for a task's approval the
 * digest of the command it showed (a tap approves exactly that command, or nothing).
 */
export const buttonMessageSchema = z.object({
  chat: z.int(),
  message: z.int(),
  digest: z.string().optional(),
});
export type ButtonMessage = z.infer<typeof buttonMessageSchema>;

export const botStateSchema = z.object({
  version: z.literal(1),
  chats: z.record(z.string(), chatStateSchema),
  /**
   * Per task or request id, the messages whose buttons decide it: a tap counts only on one of
   * these (task A's button never decides task B). Oldest ids are dropped past MAX_BUTTON_IDS
   * task ids, and apart from them past MAX_BUTTON_IDS item ids.
   */
  buttons: z.record(z.string(), z.array(buttonMessageSchema)).default({}),
});
export type BotState = z.infer<typeof botStateSchema>;

/** Task ids, and apart from them item ids, whose button messages are remembered (the newest). */
export const MAX_BUTTON_IDS = 2_000;

export class StateFile {
  private writing: Promise<void> = Promise.resolve();

  private constructor(
    readonly path: string,
    readonly state: BotState,
  ) {}

  /** Reads the state at `path`; a missing file is a fresh state, a broken one an error. */
  static async open(path: string): Promise<StateFile> {
    let text: string | null = null;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    if (text === null) return new StateFile(path, { version: 1, chats: {}, buttons: {} });
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      throw new CtxbusError(
        'validation_failed',
        `${path} is not JSON: ${(error as Error).message}`,
      );
    }
    const result = botStateSchema.safeParse(parsed);
    if (!result.success) {
      throw new CtxbusError(
        'validation_failed',
        `${path} is not a ctxbus telegram state file: ${result.error.message}`,
      );
    }
    return new StateFile(path, result.data);
  }

  /** The chat's state, created (starting after `startSeq`) when it has none yet. */
  chat(chatId: number, startSeq: number): ChatState {
    const key = String(chatId);
    let chat = this.state.chats[key];
    if (!chat) {
      chat = { lastSeq: startSeq, watch: [], digest: [] };
      this.state.chats[key] = chat;
    }
    return chat;
  }

  /**
   * Records that `message` in `chat` carries the buttons deciding `id` (a task's approval: of
   * the command whose digest is `digest`).
   */
  /** Whether a message with buttons for `id` (and this command's digest) went to `chat`. */
  hasButtons(id: string, chat: number, digest?: string): boolean {
    return (this.state.buttons[id] ?? []).some(
      (entry) => entry.chat === chat && entry.digest === digest,
    );
  }

  recordButtons(id: string, chat: number, message: number, digest?: string): void {
    const buttons = this.state.buttons;
    const list = buttons[id] ?? [];
    if (!list.some((entry) => entry.chat === chat && entry.message === message)) {
      list.push({ chat, message, ...(digest !== undefined && { digest }) });
    }
    delete buttons[id];
    buttons[id] = list;
    // Tasks and items apart: a flood of request items (any agent can write them) never pushes
    // a task's approval out of memory, nor the reverse.
    const isTask = id.startsWith('task_');
    const ids = Object.keys(buttons).filter((key) => key.startsWith('task_') === isTask);
    for (const old of ids.slice(0, Math.max(0, ids.length - MAX_BUTTON_IDS))) delete buttons[old];
  }

  /** The record of `message` in `chat` when the bot sent it with the buttons deciding `id`. */
  buttonsOf(id: string, chat: number, message: number): ButtonMessage | undefined {
    return (this.state.buttons[id] ?? []).find(
      (entry) => entry.chat === chat && entry.message === message,
    );
  }

  /** Writes the current state atomically; writes queue behind each other. */
  save(): Promise<void> {
    const text = `${JSON.stringify(this.state, null, 2)}\n`;
    const next = this.writing.then(() => writeAtomically(this.path, text));
    this.writing = next.catch(() => {});
    return next;
  }
}

async function writeAtomically(path: string, text: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temporary = `${path}.${process.pid}.tmp`;
  const handle = await open(temporary, 'w', 0o600);
  try {
    await handle.writeFile(text, 'utf8');
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temporary, path);
}
