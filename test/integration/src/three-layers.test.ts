import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient } from '@ctxbus/client';
import { openStream, openWebSocketStream } from '@ctxbus/test-kit';
import { describe, expect, it } from 'vitest';
import { useInProcessHub } from './in-process-serve.ts';
import { prepareRelease } from './three-layers-example.ts';

// Seed 004's end-to-end example (docs/three-layers.md), against a real `ctxbus serve`: a child
// run's exports reach the parent, the root's reach the blackboard and an SSE subscriber, and
// the promoted item is found by the hub's search.

const hub = useInProcessHub({
  tokens: { release: ['acme', 'claude-code'], other: ['globex', 'openclaw'] },
});

const here = fileURLToPath(import.meta.url);
const DOC = resolve(here, '../../../../docs/three-layers.md');
const EXAMPLE = resolve(here, '../three-layers-example.ts');

describe('three layers, end to end', () => {
  it('the documented example is the code this test runs', () => {
    const doc = readFileSync(DOC, 'utf8');
    const block = /```ts\n([\s\S]*?)```/.exec(doc.slice(doc.indexOf('\n## The example\n')))?.[1];
    const code = readFileSync(EXAMPLE, 'utf8').split('\n').slice(2).join('\n');
    expect(block).toBe(code);
  });

  it("a child's exports reach the parent; the root's reach the blackboard, SSE subscribers and search", async () => {
    const client = createClient({ url: hub.url, token: hub.tokens.release });
    // Subscribers: one asking for blackboard events, one as every reader before them.
    const boards = openStream(hub.url, hub.tokens.release, { query: 'blackboard=true' });
    const plain = openStream(hub.url, hub.tokens.release);
    const socket = openWebSocketStream(hub.url, hub.tokens.release, { query: 'blackboard=true' });
    const outsider = openStream(hub.url, hub.tokens.other, { query: 'blackboard=true' });
    await Promise.all([boards.ready, plain.ready, socket.ready, outsider.ready]);

    const { root, child, blackboard, resources, toParent, toBoard } = await prepareRelease(client);

    // Layer 1: the child's declared export reached the parent; the filtered draft did not.
    expect(toParent).toEqual({
      toParent: ['changes'],
      toBlackboard: [],
      toPersistent: [],
      filtered: [{ name: 'draft-changes', layer: 'parent' }],
    });
    expect(root.get('changes')).toEqual(child.get('changes'));
    expect(root.get('draft-changes')).toBeUndefined();
    expect(child.parentRunId).toBe(root.runId);
    expect(root.stepHistory.map((step) => [step.name, step.status])).toEqual([
      ['write-notes', 'completed'],
    ]);

    // Layer 2: the root's export is the board's entry.
    const notes = '4.2.0: WAL mode for SQLite stores; blackboard-updated stream events';
    expect(toBoard.toBlackboard).toEqual(['release-notes']);
    expect(await blackboard.get('release-notes')).toBe(notes);

    // ... and reached the SSE subscriber as blackboard-updated (the WebSocket one too).
    await boards.waitFor((events) => events.some((e) => e.event === 'blackboard-updated'));
    const update = boards.items().find((event) => event.event === 'blackboard-updated');
    expect(update).toMatchObject({
      event: 'blackboard-updated',
      change: 'context-added',
      board: { scope: 'thread', id: 'release-42' },
      entry: 'release-notes',
      item: { key: 'blackboard/thread/release-42/release-notes', scopeKey: 'thread:release-42' },
    });
    // A string value is held as it is (tagged value:text), not JSON-quoted.
    expect(update?.item.content).toBe(notes);
    expect(update?.item.relevanceTags).toContain('value:text');
    await socket.waitFor((events) => events.some((e) => e.data.includes('blackboard-updated')));
    // Resuming by Last-Event-ID replays it as the same event, with the same id.
    const resumed = openStream(hub.url, hub.tokens.release, {
      query: 'blackboard=true',
      lastEventId: String((update?.seq ?? 1) - 1),
    });
    await resumed.waitFor((events) => events.some((e) => e.event === 'blackboard-updated'));
    expect(resumed.events.find((e) => e.event === 'blackboard-updated')?.id).toBe(
      String(update?.seq),
    );
    resumed.close();

    // Layer 3: promoted to a persistent resource (no expiry), found by the hub's search.
    expect(toBoard.toPersistent).toEqual(['releases/4.2.0/release-notes']);
    expect(await resources.get('releases/4.2.0/release-notes')).toBe(notes);
    const found = await resources.search('WAL mode SQLite');
    expect(found.results.map((result) => result.item.key)).toContain(
      'resource/releases/4.2.0/release-notes',
    );
    const resource = found.results.find(
      (result) => result.item.key === 'resource/releases/4.2.0/release-notes',
    );
    expect(resource?.item.expiresAt).toBeNull();
    const searched = await client.search({ query: 'blackboard-updated stream events' });
    expect(searched.results.map((result) => result.item.key)).toContain(
      'resource/releases/4.2.0/release-notes',
    );

    // Readers that did not ask for boards see context-added for the same entry, as before.
    await plain.waitFor((events) =>
      events.some((e) => e.event === 'context-added' && e.data.includes('"resource/releases')),
    );
    expect(plain.events.map((event) => event.event)).not.toContain('blackboard-updated');
    expect(
      plain
        .items()
        .some((event) => event.item.key === 'blackboard/thread/release-42/release-notes'),
    ).toBe(true);

    // Another team sees nothing of it: its stream stays empty up to its own later write.
    const other = createClient({ url: hub.url, token: hub.tokens.other });
    await other.write({ type: 'status', title: 'globex marker' });
    await outsider.waitFor((events) => events.some((e) => e.data.includes('globex marker')));
    expect(outsider.items().map((event) => event.item.title)).toEqual(['globex marker']);
    expect((await other.search({ query: 'WAL mode SQLite' })).results).toEqual([]);

    for (const stream of [boards, plain, socket, outsider]) stream.close();
  });
});
