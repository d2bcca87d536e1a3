import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Store } from '@ctxbus/store';
import { openSqliteStore } from '@ctxbus/store';
import { openPostgresStore } from '@ctxbus/store/postgres';
import { call } from '@ctxbus/test-kit';
import { withPostgres } from '@ctxbus/test-kit/postgres';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mintToken } from '../auth.js';
import type { RunningHub } from '../start-hub.js';
import { startHub } from '../start-hub.js';

// Seed 000's knowledge layer over real HTTP, on SQLite and PostgreSQL (issue 27, part 8):
// "team_knowledge: ... frequently_accessed_docs (pinned references)" in the shared bundle, from
// the context analytics' counts: the team's documents found in searches or consumed most in
// the whole UTC days before today, on the hub's clock, turned here.

const DAY_MS = 86_400_000;
const START = Date.parse('2026-11-02T09:00:00.000Z');

interface Backend {
  open(): Promise<Store>;
  dispose(): void;
}

function frequentDocsCases(name: string, backend: () => Backend) {
  describe(`frequently accessed docs in GET /api/context/shared on ${name}`, () => {
    let now: number;
    let store: Store;
    let running: RunningHub;
    let disposable: Backend;
    const tokens: Record<string, string> = {};

    beforeEach(async () => {
      now = START;
      disposable = backend();
      store = await disposable.open();
      running = await startHub({
        store,
        port: 0,
        clock: () => new Date(now),
        validateResponses: true,
        usage: { flushIntervalMs: 0 },
      });
      for (const [key, teamId, runtime] of [
        ['code', 'acme', 'claude-code'],
        ['claw', 'acme', 'openclaw'],
        ['other', 'globex', 'claude-code'],
      ] as const) {
        tokens[key] = (await mintToken(store, { role: 'runtime', teamId, runtime })).token;
      }
    });
    afterEach(async () => {
      await running.close();
      await store.close();
      disposable.dispose();
    });

    const api = (token: string, method: string, path: string, body?: unknown) =>
      call(running.url, method, path, { token, ...(body !== undefined && { body }) });
    const write = async (token: string, input: Record<string, unknown>) => {
      const response = await api(token, 'POST', '/api/context', { type: 'discovery', ...input });
      expect(response.status, JSON.stringify(response.body)).toBe(201);
      return response.body.items[0] as { id: string; title: string };
    };
    const search = async (token: string, query: string) => {
      const response = await api(token, 'POST', '/api/context/search', { query });
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      expect((await api(token, 'GET', '/api/analytics')).status).toBe(200);
      return response.body.results.map((result: any) => result.item.title) as string[];
    };
    const shared = async (token: string) => {
      const response = await api(token, 'GET', '/api/context/shared');
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      // An analytics read writes the uses so far (the bundle's own injections too).
      expect((await api(token, 'GET', '/api/analytics')).status).toBe(200);
      return response.body;
    };
    const docs = (bundle: any): string[] =>
      bundle.frequentlyAccessedDocs.map((entry: any) => entry.text);

    it('lists the most used documents of the team (seed 000, layer 4), never a private one of another runtime', async () => {
      const code = tokens.code as string;
      const claw = tokens.claw as string;
      await write(code, {
        title: 'Runbook',
        key: 'docs/runbook',
        content: 'Restart the hub with ctxbus serve.',
        summary: 'Restart the hub with ctxbus serve',
      });
      await write(code, {
        title: 'Billing API',
        key: 'resource/billing-api',
        relevanceTags: ['resource'],
        content: '{"base":"https://billing.example"}',
      });
      await write(code, { type: 'decision', title: 'Queue on PostgreSQL', key: 'docs/adr-queue' });
      await write(code, { title: 'Telegram allows 30 messages a second' });
      await write(claw, { title: 'Secret plan', key: 'docs/secret-plan', visibility: 'private' });
      await write(tokens.other as string, { title: 'Globex runbook', key: 'docs/runbook' });

      expect(await search(claw, 'runbook')).toEqual(['Runbook']);
      expect(await search(code, 'billing api')).toEqual(['Billing API']);
      expect(await search(code, 'queue postgresql')).toEqual(['Queue on PostgreSQL']);
      expect(await search(code, 'telegram messages')).toEqual([
        'Telegram allows 30 messages a second',
      ]);
      expect(await search(claw, 'secret plan')).toEqual(['Secret plan']);
      expect(await search(tokens.other as string, 'runbook')).toEqual(['Globex runbook']);
      // Today's uses count from tomorrow.
      expect(docs(await shared(code))).toEqual([]);

      now += DAY_MS;
      const bundle = await shared(code);
      expect(docs(bundle)).toEqual([
        '- `docs/runbook` **Runbook** _(from claude-code, 2026-11-02)_: Restart the hub with ctxbus serve',
        expect.stringMatching(/^- `resource\/billing-api` \*\*Billing API\*\*/),
      ]);
      expect(bundle.formatted).toContain('## Frequently used documents\n- `docs/runbook`');
      expect(bundle.formatted).not.toContain('Secret plan');
      expect(bundle.formatted).not.toContain('Globex');
      // A keyed decision stays under recent decisions; a finding is no document.
      expect(bundle.recentDecisions.map((entry: any) => entry.text)).toEqual([
        expect.stringContaining('Queue on PostgreSQL'),
      ]);
      expect(bundle.sections.map((section: any) => section.title).at(-1)).toBe(
        'Frequently used documents',
      );
      // OpenClaw's own private document is in its own bundle (terse text).
      const openclaw = await shared(claw);
      expect(openclaw.formatted).toContain('FREQUENTLY USED DOCUMENTS:\n');
      expect(docs(openclaw)).toEqual([
        '- docs/runbook Runbook (from claude-code): Restart the hub with ctxbus serve',
        '- docs/secret-plan Secret plan (from openclaw)',
        expect.stringContaining('resource/billing-api Billing API'),
      ]);
      expect(docs(await shared(tokens.other as string))).toEqual([
        expect.stringContaining('Globex runbook'),
      ]);
    });

    it('keeps the list (and the prompt) unchanged between bundles while the counts that rank it have not changed', async () => {
      const code = tokens.code as string;
      const claw = tokens.claw as string;
      await write(code, { title: 'Runbook', key: 'docs/runbook' });
      await write(code, { title: 'Style guide', relevanceTags: ['reference'] });
      await search(claw, 'runbook');
      await search(claw, 'runbook');
      await search(code, 'style guide');

      now += DAY_MS;
      const first = await shared(code);
      const second = await shared(code);
      expect(docs(first)).toEqual([
        expect.stringContaining('Runbook'),
        expect.stringContaining('Style guide'),
      ]);
      expect(docs(second)).toEqual(docs(first));
      expect(second.contextHash).toBe(first.contextHash);
      // Uses today (and the bundles' own injections) do not move today's list...
      for (let round = 0; round < 3; round++) await search(code, 'style guide');
      const later = await shared(code);
      expect(later.contextHash).toBe(first.contextHash);
      // ...and tomorrow the style guide outranks the runbook, but the same documents keep
      // their places (by label), so the prompt stays as it was.
      now += DAY_MS;
      const tomorrow = await shared(code);
      expect(tomorrow.formatted).toBe(first.formatted);
      // A rewritten document keeps its uses and shows its new version.
      await write(code, { title: 'Runbook v2', key: 'docs/runbook' });
      expect(docs(await shared(code))).toEqual([
        expect.stringContaining('Runbook v2'),
        expect.stringContaining('Style guide'),
      ]);
    });
  });
}

frequentDocsCases('SQLite', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ctxbus-frequent-docs-'));
  return {
    open: async () => openSqliteStore({ path: join(dir, 'ctxbus.db') }),
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
});

await withPostgres('frequently accessed docs on PostgreSQL', (url, schemas) => {
  frequentDocsCases('PostgreSQL', () => {
    const schema = schemas.next('frequent_docs');
    return {
      open: async () => openPostgresStore({ connectionString: url, schema }),
      dispose: () => {},
    };
  });
});
