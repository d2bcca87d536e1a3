import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CtxbusClient } from '@ctxbus/client';
import { createClient } from '@ctxbus/client';
import type { ContextItem } from '@ctxbus/core/contract';
import { useHubProcess, waitUntil } from '@ctxbus/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapSharedContext } from './bootstrap.js';
import type { SharedContextBridge } from './bridge.js';
import { createSharedContextBridge, SHARED_CONTEXT_FILE_TAG } from './bridge.js';
import type { SharedContextPaths } from './paths.js';
import { sharedContextPaths } from './paths.js';
import { writeAgentOutput } from './writers.js';

const hub = useHubProcess({
  // gateway: another writer of the directory's own runtime (its agents name themselves);
  // remote: another runtime, which writes only as itself.
  tokens: {
    bridge: ['acme', 'openclaw'],
    gateway: ['acme', 'openclaw'],
    remote: ['acme', 'claude-code'],
  },
});

let base: string;
let paths: SharedContextPaths;
let stateFile: string;
let remote: CtxbusClient;
let gateway: CtxbusClient;

beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), 'ctxbus-sc-bridge-'));
  paths = sharedContextPaths({ dir: join(base, 'shared-context') });
  stateFile = join(base, 'state', 'bridge.json');
  bootstrapSharedContext(paths);
  remote = createClient({ url: hub.url, token: hub.tokens.remote });
  gateway = createClient({ url: hub.url, token: hub.tokens.gateway });
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

const bridgeFor = () =>
  createSharedContextBridge({
    paths,
    client: createClient({ url: hub.url, token: hub.tokens.bridge }),
    agentRuntime: 'openclaw',
    stateFile,
    rescanIntervalMs: 60_000,
  });

/** Every shared-context file item on the hub, superseded versions included, oldest first. */
async function fileItems(): Promise<ContextItem[]> {
  const page = await remote.list({
    tags: SHARED_CONTEXT_FILE_TAG,
    includeSuperseded: true,
    limit: 500,
  });
  return page.items.sort((a, b) => a.seq - b.seq);
}
const keysOf = (items: ContextItem[]) => items.map((item) => item.key);
const hasKey = async (key: string) => keysOf(await fileItems()).includes(key);
const fileAt = (relPath: string) => join(paths.root, ...relPath.split('/'));

const remoteFile = (relPath: string, agent: string, content: string, by = gateway) =>
  by.write({
    type: 'discovery',
    title: `Remote ${relPath}`,
    content,
    key: `shared-context/${relPath}`,
    relevanceTags: [SHARED_CONTEXT_FILE_TAG, agent],
    source: { agentId: agent },
  });

describe('the shared-context bridge against a real hub', () => {
  const now = new Date('2026-02-04T09:00:00Z');
  let bridge: SharedContextBridge;
  const first = 'agent-outputs/alpha/2026-02-04/first-finding.md';
  const second = 'agent-outputs/beta/2026-02-04/live-finding.md';
  const fromBus = 'agent-outputs/gamma/2026-02-04/remote-note.md';

  it('publishes existing and new files, and writes bus items to files', async () => {
    writeAgentOutput(paths, {
      agent: 'alpha',
      title: 'First finding',
      body: 'Acme churn risk.',
      tags: ['Acme', 'risk'],
      now,
    });
    bridge = bridgeFor();
    await bridge.start();
    const published = (await fileItems()).find((item) => item.key === `shared-context/${first}`);
    expect(published).toMatchObject({
      title: 'First finding',
      source: { runtime: 'openclaw', agentId: 'alpha' },
      content: readFileSync(fileAt(first), 'utf8'),
    });
    expect(published?.relevanceTags).toEqual([
      'shared-context',
      SHARED_CONTEXT_FILE_TAG,
      'alpha',
      'acme',
      'risk',
    ]);

    // Live: the watcher (or the rescan) publishes a new file.
    writeAgentOutput(paths, {
      agent: 'beta',
      title: 'Live finding',
      body: 'Seen while running.',
      now,
    });
    await waitUntil(() => hasKey(`shared-context/${second}`), 'the live file on the bus');

    // bus -> dir: a refused item first (another agent's path), then a good one after it.
    await remote.write({
      type: 'discovery',
      title: 'Not yours',
      content: 'sneaky',
      key: 'shared-context/agent-outputs/alpha/2026-02-04/intrusion.md',
      relevanceTags: [SHARED_CONTEXT_FILE_TAG],
      source: { agentId: 'gamma' },
    });
    await remote.write({
      type: 'discovery',
      title: 'Curator file',
      content: 'x',
      key: 'shared-context/priorities.md',
      relevanceTags: [SHARED_CONTEXT_FILE_TAG],
      source: { agentId: 'gamma' },
    });
    // Another runtime naming one of the directory's agents writes nothing as it; it writes
    // only under its own runtime's name.
    await remoteFile('agent-outputs/alpha/2026-02-04/as-alpha.md', 'alpha', 'posing', remote);
    const ownDir = 'agent-outputs/claude-code/2026-02-04/from-claude.md';
    await remoteFile(ownDir, 'whoever', 'From Claude Code.\n', remote);
    await remoteFile(fromBus, 'gamma', '# Remote note\n\nWritten elsewhere.\n');
    await waitUntil(() => existsSync(fileAt(fromBus)), 'the bus item as a file');
    expect(existsSync(fileAt('agent-outputs/alpha/2026-02-04/as-alpha.md'))).toBe(false);
    expect(readFileSync(fileAt(ownDir), 'utf8')).toBe('From Claude Code.\n');
    expect(readFileSync(fileAt(fromBus), 'utf8')).toBe('# Remote note\n\nWritten elsewhere.\n');
    expect(existsSync(fileAt('agent-outputs/alpha/2026-02-04/intrusion.md'))).toBe(false);
    expect(readFileSync(paths.priorities, 'utf8')).not.toBe('x');
    await bridge.stop();
  });

  it('catches up both ways after a restart, without a duplicate or a loop', async () => {
    // While the bridge is down: a changed file, a new file, a new bus item.
    writeFileSync(
      fileAt(first),
      `${readFileSync(fileAt(first), 'utf8')}\nUpdate: churn confirmed.\n`,
    );
    const third = writeAgentOutput(paths, {
      agent: 'alpha',
      title: 'While down',
      body: 'Offline work.',
      now,
    }).relPath;
    const late = 'agent-outputs/delta/2026-02-04/late.md';
    await remoteFile(late, 'delta', 'Late news.\n');

    bridge = bridgeFor();
    const report = await bridge.syncOnce();
    expect(report.published.sort()).toEqual([first, third].sort());
    expect(report.written).toEqual([late]);
    expect(readFileSync(fileAt(late), 'utf8')).toBe('Late news.\n');
    await bridge.start();
    await bridge.stop();

    // A third run finds nothing to do.
    const idle = await bridgeFor().syncOnce();
    expect(idle.published).toEqual([]);
    expect(idle.written).toEqual([]);

    const items = await fileItems();
    const count = (relPath: string) =>
      items.filter((item) => item.key === `shared-context/${relPath}`).length;
    expect(count(first)).toBe(2); // the original and its update (which supersedes it)
    expect(count(second)).toBe(1);
    expect(count(third)).toBe(1);
    // Files the bridge wrote from the bus were never published back.
    expect(
      items
        .filter((item) => item.key === `shared-context/${fromBus}`)
        .map((item) => item.source.runtime),
    ).toEqual(['openclaw']);
    expect(
      items
        .filter((item) => item.key === `shared-context/${late}`)
        .map((item) => item.source.runtime),
    ).toEqual(['openclaw']);
    const current = items.filter(
      (item) => item.key === `shared-context/${first}` && item.supersededBy === null,
    );
    expect(current.map((item) => item.content)).toEqual([readFileSync(fileAt(first), 'utf8')]);
    const state = JSON.parse(readFileSync(stateFile, 'utf8')) as { lastSeq: number };
    expect(state.lastSeq).toBe(Math.max(...items.map((item) => item.seq)));
  });
});
