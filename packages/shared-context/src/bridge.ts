import { createHash } from 'node:crypto';
import type { FSWatcher } from 'node:fs';
import { existsSync, mkdirSync, readFileSync, watch } from 'node:fs';
import { dirname, join } from 'node:path';
import type { CtxbusClient } from '@ctxbus/client';
import type { ContextItem, ContextItemInput, Logger } from '@ctxbus/core/contract';
import { CtxbusError, silentLogger } from '@ctxbus/core/contract';
import { stableId } from '@ctxbus/core/light';
import { z } from 'zod';
import { policyWrite, readTextOrNull, writeFileAtomic } from './files.js';
import { parseDocument, stringList } from './front-matter.js';
import { walkFiles } from './outputs.js';
import type { SharedContextPaths } from './paths.js';
import { AGENT_ID_PATTERN } from './paths.js';

/** The tag that marks an item as a shared-context file (both directions). */
export const SHARED_CONTEXT_FILE_TAG = 'shared-context:file';
/** Items' keys are this prefix plus the file's path relative to the directory. */
export const SHARED_CONTEXT_KEY_PREFIX = 'shared-context/';

const KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/;
const MAX_CONTENT_CHARS = 100_000;
const MAX_OWN_ITEMS = 5_000;

const bridgeStateSchema = z.object({
  version: z.literal(1),
  /** The last bus sequence the bridge has processed. */
  lastSeq: z.int().nonnegative(),
  /** Each file the bridge knows in step with the bus: its content hash and item id. */
  files: z.record(z.string(), z.object({ sha256: z.string(), itemId: z.string() })),
  /** Items this bridge published (never written back), oldest first. */
  ownItems: z.array(z.string()),
});

export type BridgeState = z.infer<typeof bridgeStateSchema>;

export interface SharedContextBridgeOptions {
  paths: SharedContextPaths;
  /** The full client, with a runtime token of the team that shares the directory. */
  client: CtxbusClient;
  /**
   * The runtime the client's token writes as (`openclaw`, say): the runtime whose agents own
   * the directory. Published items carry `runtimeOptions[agentRuntime].sharedContext = { path,
   * sha256 }`, and a bus item of this runtime is written as the agent its `source.agentId`
   * names; an item of any other runtime only as that runtime (`agent-outputs/<runtime>/`).
   */
  agentRuntime?: string;
  /** Where the bridge keeps its state (hashes, last sequence); written atomically. */
  stateFile: string;
  logger?: Logger;
  /** Full rescan of the directory every this many ms while started (default 30 000). */
  rescanIntervalMs?: number;
  /** Watch the directory with `fs.watch` (default true); the rescan runs regardless. */
  watch?: boolean;
}

export interface SyncReport {
  published: string[];
  written: string[];
  skipped: { path: string; reason: string }[];
  lastSeq: number;
}

export interface SharedContextBridge {
  /**
   * Syncs once, then follows the bus stream and the directory until `stop`. An unreachable
   * hub does not fail it (logged; the stream reconnects and the rescan publishes later);
   * other errors (a bad token) do.
   */
  start(): Promise<void>;
  stop(): Promise<void>;
  /** One full pass: publishes new or changed files, then writes bus items missed so far. */
  syncOnce(): Promise<SyncReport>;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

function loadState(path: string, logger: Logger): BridgeState {
  const text = readTextOrNull(path);
  if (text !== null) {
    try {
      return bridgeStateSchema.parse(JSON.parse(text));
    } catch (error) {
      logger.warn(
        { path, error: (error as Error).message },
        'shared-context bridge: unreadable state, starting afresh',
      );
    }
  }
  return { version: 1, lastSeq: 0, files: {}, ownItems: [] };
}

function validTag(tag: string): string | null {
  const clean = tag
    .trim()
    .toLowerCase()
    .replace(/[\s,]+/g, '-');
  return clean.length > 0 && clean.length <= 64 ? clean : null;
}

/** The item a file becomes (null when the file cannot be one: see `reason`). */
export function itemForFile(
  relPath: string,
  text: string,
  agentRuntime?: string,
): { item: ContextItemInput; sha256: string } | { reason: string } {
  const key = `${SHARED_CONTEXT_KEY_PREFIX}${relPath}`;
  if (key.length > 200 || !KEY_PATTERN.test(key))
    return { reason: 'the path cannot be an item key' };
  if (text.length > MAX_CONTENT_CHARS || text.includes('\u0000'))
    return { reason: 'too large or binary' };
  const agent = relPath.split('/')[1] ?? '';
  const hash = sha256(text);
  const { meta, body } = parseDocument(text);
  const heading = /^#\s+(.+)$/m.exec(body)?.[1];
  const title = (
    typeof meta.title === 'string' && meta.title.trim()
      ? meta.title
      : (heading ?? relPath.split('/').at(-1) ?? relPath)
  )
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 300);
  const tags = [
    ...new Set(
      ['shared-context', SHARED_CONTEXT_FILE_TAG, agent, ...stringList(meta.tags)]
        .map(validTag)
        .filter((tag): tag is string => tag !== null),
    ),
  ].slice(0, 32);
  return {
    sha256: hash,
    item: {
      id: stableId('shared-context', relPath, hash),
      type: 'discovery',
      title,
      content: text,
      key,
      relevanceTags: tags,
      source: { agentId: agent },
      ...(agentRuntime && {
        runtimeOptions: { [agentRuntime]: { sharedContext: { path: relPath, sha256: hash } } },
      }),
    },
  };
}

/** The relative path an item names, or null when it is not a shared-context file item. */
export function relPathOfItem(item: Pick<ContextItem, 'key' | 'relevanceTags'>): string | null {
  if (!item.relevanceTags.some((tag) => tag.toLowerCase() === SHARED_CONTEXT_FILE_TAG)) return null;
  if (!item.key?.startsWith(SHARED_CONTEXT_KEY_PREFIX)) return null;
  return item.key.slice(SHARED_CONTEXT_KEY_PREFIX.length) || null;
}

/**
 * Whom a bus item is written as: for the directory's own runtime, the agent its
 * `source.agentId` names (the runtime's agents share its token); for any other runtime, that
 * runtime, which the hub authenticated. A runtime cannot write as one of the directory's agents
 * by naming it: `source.agentId` is whatever its writer says.
 */
function writerOf(item: ContextItem, agentRuntime: string | undefined): string | null {
  if (agentRuntime !== undefined && item.source.runtime === agentRuntime) {
    return item.source.agentId ?? null;
  }
  return item.source.runtime;
}

/**
 * Keeps a shared-context directory and a hub in step, both ways (see the README's "Bridge"
 * section for the convention):
 *
 * - dir -> bus: every new or changed file under `agent-outputs/<agent>/` becomes an item with
 *   a deterministic id (`stableId(path, content hash)`), key `shared-context/<path>` (a
 *   change supersedes the previous version), tags `shared-context`, `shared-context:file` and
 *   the agent, `source.agentId` the agent.
 * - bus -> dir: an item tagged `shared-context:file` whose key is `shared-context/<path>` is
 *   written to `<path>` through the write policy, as its writer (`writerOf`: the agent its
 *   `source.agentId` names for the directory's own runtime, else the runtime), so an item
 *   lands only in its writer's own directories.
 *
 * No loops: items the bridge published are remembered and never written back, and a file the
 * bridge wrote is recorded with its hash, so the scan does not publish it. The state file
 * (hashes, published ids, last sequence) survives restarts: nothing is published twice, and
 * bus items written while it was down are caught up from the last sequence.
 */
export function createSharedContextBridge(
  options: SharedContextBridgeOptions,
): SharedContextBridge {
  const { paths, client, stateFile } = options;
  const logger = options.logger ?? silentLogger;
  const state = loadState(stateFile, logger);
  const own = new Set(state.ownItems);
  let queue: Promise<unknown> = Promise.resolve();
  let abort: AbortController | null = null;
  let streaming: Promise<void> | null = null;
  let watcher: FSWatcher | null = null;
  let timer: NodeJS.Timeout | null = null;
  let debounce: NodeJS.Timeout | null = null;

  /** Runs one operation after the previous ones: scans and bus writes never interleave. */
  const serial = <T>(operation: () => Promise<T>): Promise<T> => {
    const next = queue.then(operation, operation);
    queue = next.catch(() => {});
    return next;
  };

  const saveState = () => {
    state.ownItems = [...own].slice(-MAX_OWN_ITEMS);
    mkdirSync(dirname(stateFile), { recursive: true });
    writeFileAtomic(stateFile, `${JSON.stringify(state)}\n`);
  };

  const publishChanged = async (report: SyncReport) => {
    const batch: ContextItemInput[] = [];
    const pending: [string, string, string][] = [];
    for (const file of walkFiles(paths.agentOutputs)) {
      const relPath = `agent-outputs/${file}`;
      const agent = file.split('/')[0] ?? '';
      if (!AGENT_ID_PATTERN.test(agent) || !file.includes('/')) continue;
      const text = readFileSync(join(paths.agentOutputs, ...file.split('/')), 'utf8');
      if (state.files[relPath]?.sha256 === sha256(text)) continue;
      const made = itemForFile(relPath, text, options.agentRuntime);
      if ('reason' in made) {
        report.skipped.push({ path: relPath, reason: made.reason });
        continue;
      }
      batch.push(made.item);
      pending.push([relPath, made.sha256, made.item.id as string]);
    }
    for (let start = 0; start < batch.length; start += 100) {
      await client.write(batch.slice(start, start + 100));
      for (const [relPath, hash, itemId] of pending.slice(start, start + 100)) {
        state.files[relPath] = { sha256: hash, itemId };
        own.add(itemId);
        report.published.push(relPath);
      }
      saveState();
    }
  };

  const applyItem = (item: ContextItem, report: SyncReport) => {
    if (item.seq > state.lastSeq) state.lastSeq = item.seq;
    const relPath = relPathOfItem(item);
    if (relPath === null || own.has(item.id)) return;
    const hash = sha256(item.content);
    if (state.files[relPath]?.sha256 === hash) return;
    const absolute = join(paths.root, ...relPath.split('/'));
    if (existsSync(absolute) && sha256(readTextOrNull(absolute) ?? '') === hash) {
      state.files[relPath] = { sha256: hash, itemId: item.id };
      return;
    }
    const agent = writerOf(item, options.agentRuntime);
    if (!agent || !AGENT_ID_PATTERN.test(agent)) {
      report.skipped.push({ path: relPath, reason: 'the item names no valid agent' });
      logger.warn(
        { itemId: item.id, path: relPath },
        'shared-context bridge: item without an agent id, not written',
      );
      return;
    }
    try {
      policyWrite(paths, relPath, item.content, { agent, mode: 'overwrite' });
    } catch (error) {
      if (!CtxbusError.isInstance(error)) throw error;
      report.skipped.push({ path: relPath, reason: error.message });
      logger.warn(
        { itemId: item.id, path: relPath, error: error.message },
        'shared-context bridge: item refused by the write policy',
      );
      return;
    }
    state.files[relPath] = { sha256: hash, itemId: item.id };
    report.written.push(relPath);
  };

  const emptyReport = (): SyncReport => ({
    published: [],
    written: [],
    skipped: [],
    lastSeq: state.lastSeq,
  });

  const pullMissed = async (report: SyncReport) => {
    const items: ContextItem[] = [];
    let before: number | undefined;
    for (;;) {
      const page = await client.list({
        tags: SHARED_CONTEXT_FILE_TAG,
        since: state.lastSeq,
        limit: 200,
        ...(before !== undefined && { before }),
      });
      items.push(...page.items);
      if (page.nextBefore === null || page.items.length === 0) break;
      before = page.nextBefore;
    }
    for (const item of items.sort((a, b) => a.seq - b.seq)) applyItem(item, report);
    saveState();
  };

  const syncOnce = () =>
    serial(async () => {
      const report = emptyReport();
      await publishChanged(report);
      await pullMissed(report);
      report.lastSeq = state.lastSeq;
      return report;
    });

  const rescan = () => {
    void serial(async () => {
      const report = emptyReport();
      await publishChanged(report);
      if (report.published.length > 0)
        logger.info({ published: report.published }, 'shared-context bridge: published');
    }).catch((error: unknown) =>
      logger.warn(
        { error: (error as Error).message },
        'shared-context bridge: rescan failed; retrying at the next one',
      ),
    );
  };

  const follow = async (signal: AbortSignal) => {
    try {
      for await (const event of client.stream({
        tags: SHARED_CONTEXT_FILE_TAG,
        since: state.lastSeq,
        signal,
      })) {
        if (event.event !== 'context-added') continue;
        await serial(async () => {
          const report = emptyReport();
          applyItem(event.item, report);
          if (event.seq > state.lastSeq) state.lastSeq = event.seq;
          saveState();
          if (report.written.length > 0)
            logger.info({ written: report.written }, 'shared-context bridge: wrote');
        });
      }
    } catch (error) {
      if (!signal.aborted)
        logger.error(
          { error: (error as Error).message },
          'shared-context bridge: the bus stream ended',
        );
    }
  };

  return {
    syncOnce,
    async start() {
      if (abort) return;
      mkdirSync(paths.agentOutputs, { recursive: true });
      try {
        await syncOnce();
      } catch (error) {
        // Fail open: a hub that is down now is caught up by the stream (from the last
        // sequence) once it connects, and by the next rescan.
        if (!CtxbusError.isInstance(error) || error.code !== 'unavailable') throw error;
        logger.warn(
          { error: error.message },
          'shared-context bridge: hub unreachable; following it until it answers',
        );
      }
      abort = new AbortController();
      streaming = follow(abort.signal);
      if (options.watch !== false) {
        try {
          watcher = watch(paths.agentOutputs, { recursive: true }, () => {
            if (debounce) clearTimeout(debounce);
            debounce = setTimeout(rescan, 100);
          });
          watcher.on('error', (error) =>
            logger.warn(
              { error: error.message },
              'shared-context bridge: watcher failed; the periodic rescan continues',
            ),
          );
        } catch (error) {
          logger.warn(
            { error: (error as Error).message },
            'shared-context bridge: cannot watch the directory; rescanning periodically',
          );
        }
      }
      timer = setInterval(rescan, options.rescanIntervalMs ?? 30_000);
      timer.unref();
    },
    async stop() {
      if (!abort) return;
      abort.abort();
      watcher?.close();
      if (timer) clearInterval(timer);
      if (debounce) clearTimeout(debounce);
      await streaming;
      await queue;
      saveState();
      abort = null;
      streaming = null;
      watcher = null;
      timer = null;
      debounce = null;
    },
  };
}
