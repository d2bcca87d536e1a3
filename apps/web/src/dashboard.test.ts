import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Blackboard, createClient, PersistentResources } from '@ctxbus/client';
import type { CliRun, WebhookReceiver } from '@ctxbus/test-kit';
import {
  call,
  runCli,
  spawnCli,
  startWebhookReceiver,
  tempDir,
  useHubProcess,
  waitUntil,
  workerPolicy,
} from '@ctxbus/test-kit';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LaunchedBrowser } from './testing/browser.js';
import { browserUnavailable, launchChromium } from './testing/browser.js';

// The dashboard as people use it: `ctxbus serve` (the built CLI, which ships the built page)
// serves it, headless Chromium loads it, and the test acts through the page while runtimes
// write over REST and a real `ctxbus worker` runs the task a person approves on the board.

const unavailable = browserUnavailable();
const AXE_SOURCE = readFileSync(
  createRequire(import.meta.url).resolve('axe-core/axe.min.js'),
  'utf8',
);
const SCREENSHOTS = join(import.meta.dirname, '../test-results/screenshots');
const DESKTOP = { width: 1280, height: 900 };
const PHONE = { width: 390, height: 844 };

const hubDir = tempDir('ctxbus-web-hub-');
writeFileSync(
  join(hubDir, 'capabilities.yaml'),
  readFileSync(join(import.meta.dirname, '../../../capabilities.yaml'), 'utf8'),
);

// The worker's machine: one project, an allow-list that does not hold `ls -a`.
const machine = tempDir('ctxbus-web-worker-');
const project = join(machine, 'projects', 'demo');
mkdirSync(project, { recursive: true });
writeFileSync(join(project, 'check.js'), "console.log('checked');\n");
const policyFile = join(machine, 'capabilities.yaml');
writeFileSync(policyFile, workerPolicy(join(machine, 'projects'), ['node check.js']));

/** A plain page on another origin (another port): what a web app using adapter-web is. */
async function startPageServer(): Promise<{ server: Server; origin: string }> {
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html' });
    response.end('<!doctype html><title>another app</title><p>another app</p>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}
const allowedApp = await startPageServer();
const otherApp = await startPageServer();

describe.skipIf(unavailable !== null)(
  `the dashboard in Chromium${unavailable ? ` (skipped: ${unavailable})` : ''}`,
  () => {
    const hub = useHubProcess({
      dataDir: hubDir,
      args: [
        '--allow-private-webhooks',
        '--webhook-attempts',
        '2',
        '--webhook-backoff-ms',
        '20',
        '--cors-origin',
        allowedApp.origin,
      ],
      tokens: {
        web: ['acme', 'web'],
        code: ['acme', 'claude-code'],
        claw: ['acme', 'openclaw'],
        globex: ['globex', 'claude-code'],
      },
    });
    let launched: LaunchedBrowser;
    let browser: Browser;
    let receiver: WebhookReceiver;
    const workers: CliRun[] = [];
    beforeAll(async () => {
      launched = await launchChromium();
      browser = launched.browser;
      receiver = await startWebhookReceiver();
    });
    afterAll(async () => {
      for (const worker of workers) worker.child.kill('SIGKILL');
      await launched?.close();
      await receiver?.close();
      allowedApp.server.close();
      otherApp.server.close();
    });

    async function write(token: string, body: Record<string, unknown>) {
      const response = await call(hub.url, 'POST', '/api/context', { token, body });
      expect(response.status, JSON.stringify(response.body)).toBe(201);
      return response.body.items[0] as { id: string; seq: number };
    }

    /** A page signed in with `token`, its stream live; every request URL it made is kept. */
    async function signedIn(token = hub.tokens.web, viewport = DESKTOP) {
      const context = await browser.newContext({ viewport });
      const page = await context.newPage();
      const requested: string[] = [];
      page.on('request', (request) => requested.push(request.url()));
      await page.goto(hub.url);
      await page.getByLabel('Runtime token').fill(token);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByTestId('live-status').filter({ hasText: 'live' }).waitFor();
      return { page, requested, close: () => context.close() };
    }

    async function go(page: Page, view: string) {
      await page.evaluate((hash) => {
        location.hash = hash;
      }, `#/${view}`);
      await page.locator('#view-title').waitFor();
    }

    it('serves the page from the hub with a strict content security policy', async () => {
      const response = await fetch(`${hub.url}/`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(response.headers.get('content-security-policy')).toContain("script-src 'self'");
      expect(response.headers.get('content-security-policy')).toContain("connect-src 'self'");
      expect(response.headers.get('cache-control')).toBe('no-cache');
      const html = await response.text();
      const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
      expect(script).toBeDefined();
      const asset = await fetch(`${hub.url}${script}`);
      expect(asset.status).toBe(200);
      expect(asset.headers.get('cache-control')).toContain('immutable');
      const again = await fetch(`${hub.url}${script}`, {
        headers: { 'if-none-match': asset.headers.get('etag') ?? '' },
      });
      expect(again.status).toBe(304);
      expect((await fetch(`${hub.url}/assets/nothing.js`)).status).toBe(404);
      // The API is untouched: its own 404s and routes.
      expect((await fetch(`${hub.url}/health`)).status).toBe(200);
    });

    it('shows nothing without a token, and a wrong or admin token gets the hub’s error and no data', async () => {
      await write(hub.tokens.code, { type: 'decision', title: 'Secret plan of acme' });
      const context = await browser.newContext({ viewport: DESKTOP });
      const page = await context.newPage();
      await page.goto(hub.url);
      await expect(page.getByLabel('Runtime token').isVisible()).resolves.toBe(true);
      await page.getByLabel('Runtime token').fill('ctx_wrong_token_value');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('alert').filter({ hasText: 'unauthorized' }).waitFor();
      await page.getByLabel('Runtime token').fill(hub.adminToken ?? '');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('alert').filter({ hasText: 'forbidden' }).waitFor();
      expect(await page.content()).not.toContain('Secret plan of acme');
      expect(await page.getByTestId('feed').count()).toBe(0);
      expect(await page.evaluate(() => sessionStorage.length + localStorage.length)).toBe(0);
      await context.close();
    });

    it('keeps the token in session storage only, never in a URL; sign out forgets it', async () => {
      const { page, requested, close } = await signedIn();
      await go(page, 'preview');
      await go(page, 'tasks');
      expect(page.url()).not.toContain(hub.tokens.web);
      expect(requested.filter((url) => url.includes(hub.tokens.web))).toEqual([]);
      expect(await page.evaluate(() => localStorage.length)).toBe(0);
      expect(await page.evaluate(() => sessionStorage.getItem('ctxbus.token'))).toBe(
        hub.tokens.web,
      );
      // A reload stays signed in (same tab); sign out forgets the token.
      await page.reload();
      await page.getByTestId('live-status').filter({ hasText: 'live' }).waitFor();
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByLabel('Runtime token').waitFor();
      expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
      await close();
    });

    it("a write over REST appears live in the feed; another team's never does", async () => {
      const { page, close } = await signedIn();
      const foreign = await write(hub.tokens.globex, { type: 'alert', title: 'globex only' });
      const item = await write(hub.tokens.code, {
        type: 'alert',
        title: 'CI is red on main',
        urgency: 'blocking',
        relevanceTags: ['ci'],
      });
      const row = page.locator(`[data-testid=feed-item][data-id="${item.id}"]`);
      await row.waitFor();
      expect(await row.textContent()).toContain('CI is red on main');
      expect(await row.textContent()).toContain('blocking');
      expect(await page.locator(`[data-id="${foreign.id}"]`).count()).toBe(0);
      expect(await page.content()).not.toContain('globex only');
      await close();
    });

    it("shows an agent's hidden or reordering characters as escapes, in the feed and the item", async () => {
      const { page, close } = await signedIn();
      const item = await write(hub.tokens.claw, {
        type: 'status',
        title: 'Deploy \u202eexe.txt\u202c approved',
        content: 'Hidden\u200bzero \u2066width\u2069',
      });
      const row = page.locator(`[data-testid=feed-item][data-id="${item.id}"]`);
      await row.waitFor();
      expect(await row.locator('.item-title').textContent()).toBe(
        'Deploy \\u202eexe.txt\\u202c approved',
      );
      await row.locator('.item-title').click();
      await page.getByTestId('item-detail').waitFor();
      expect(await page.locator('#view-title').textContent()).toContain('\\u202e');
      expect(await page.locator('pre.content').textContent()).toBe(
        'Hidden\\u200bzero \\u2066width\\u2069',
      );
      await close();
    });

    it('filters by scope, type, urgency, runtime and tags, and searches through the hub', async () => {
      await write(hub.tokens.claw, {
        type: 'discovery',
        title: 'Telegram users prefer short digests',
        relevanceTags: ['ux'],
        scope: 'space',
        scopeKey: 'team:assistant',
      });
      await write(hub.tokens.code, {
        type: 'decision',
        title: 'Use SQLite for the embedded store',
        content: 'WAL mode and FTS5 full-text search.',
        relevanceTags: ['storage'],
        urgency: 'attention',
      });
      await write(hub.tokens.code, {
        type: 'alert',
        title: 'Disk almost full',
        urgency: 'blocking',
      });
      const { page, close } = await signedIn();
      const rows = page.getByTestId('feed').getByTestId('feed-item');
      const titles = () => rows.locator('.item-title').allTextContents();
      /** Waits until the feed shows `wanted` and not `unwanted`; returns every row's text. */
      const shows = async (wanted: string, unwanted: string, what: string) => {
        await waitUntil(async () => {
          const shown = await titles();
          return shown.includes(wanted) && !shown.includes(unwanted);
        }, what);
        return rows.allTextContents();
      };
      await page.getByLabel('Type').selectOption('decision');
      for (const row of await shows(
        'Use SQLite for the embedded store',
        'Disk almost full',
        'the type filter',
      )) {
        expect(row).toContain('decision');
      }
      await page.getByLabel('Type').selectOption('');
      await page.getByLabel('Runtime').selectOption('openclaw');
      for (const row of await shows(
        'Telegram users prefer short digests',
        'Disk almost full',
        'the runtime filter',
      )) {
        expect(row).toContain('openclaw');
      }
      await page.getByLabel('Runtime').selectOption('');
      await page.getByLabel('Scope').selectOption('space');
      for (const row of await shows(
        'Telegram users prefer short digests',
        'Use SQLite for the embedded store',
        'the scope filter',
      )) {
        expect(row).toContain('space');
      }
      await page.getByLabel('Scope').selectOption('');
      await page.getByLabel('Urgency at least').selectOption('blocking');
      for (const row of await shows(
        'Disk almost full',
        'Use SQLite for the embedded store',
        'the urgency filter',
      )) {
        expect(row).toContain('blocking');
      }
      await page.getByLabel('Urgency at least').selectOption('');
      await page.getByLabel('Tags').fill('storage, ux');
      await shows('Use SQLite for the embedded store', 'Disk almost full', 'the tags filter');
      expect(await titles()).toContain('Telegram users prefer short digests');
      await page.getByLabel('Tags').fill('');
      await page.getByLabel('Search').fill('which full-text search engine?');
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      const results = page.getByTestId('search-results').getByTestId('feed-item');
      await results.first().waitFor();
      expect(await results.first().locator('.item-title').textContent()).toBe(
        'Use SQLite for the embedded store',
      );
      // The hub's passage marks the matched words: shown marked, never as Markdown's **.
      expect(await results.first().locator('.item-summary mark').count()).toBeGreaterThan(0);
      expect(await results.first().locator('.item-summary').textContent()).not.toContain('**');
      await page.getByRole('button', { name: 'Back to live' }).click();
      await page.getByTestId('feed').waitFor();
      await close();
    });

    it('search keeps the runtime and urgency filters that are set', async () => {
      await write(hub.tokens.claw, {
        type: 'discovery',
        title: 'Kestrel cache warms in the morning',
      });
      await write(hub.tokens.code, {
        type: 'alert',
        title: 'Kestrel cache is cold',
        urgency: 'blocking',
      });
      const { page, close } = await signedIn();
      const results = page.getByTestId('search-results').getByTestId('feed-item');
      const search = async () => {
        await page.getByLabel('Search').fill('kestrel cache');
        await page.getByRole('button', { name: 'Search', exact: true }).click();
        await page.getByTestId('search-results').waitFor();
        await waitUntil(async () => (await results.count()) > 0, 'search results');
        return results.locator('.item-title').allTextContents();
      };
      await page.getByLabel('Runtime').selectOption('openclaw');
      expect(await search()).toEqual(['Kestrel cache warms in the morning']);
      await page.getByRole('button', { name: 'Back to live' }).click();
      await page.getByLabel('Runtime').selectOption('');
      await page.getByLabel('Urgency at least').selectOption('blocking');
      expect(await search()).toEqual(['Kestrel cache is cold']);
      await close();
    });

    it('shows an item with its provenance, supersession chain and consumption per runtime', async () => {
      const first = await write(hub.tokens.code, {
        type: 'decision',
        title: 'Deploy on Fridays',
        source: { agentId: 'planner', threadId: 'release-7' },
      });
      const second = await write(hub.tokens.code, {
        type: 'decision',
        title: 'Never deploy on Fridays',
        supersedes: first.id,
        source: { agentId: 'planner', threadId: 'release-7' },
      });
      const consumed = await call(hub.url, 'POST', `/api/context/${second.id}/consume`, {
        token: hub.tokens.claw,
      });
      expect(consumed.status).toBe(200);
      const { page, close } = await signedIn();
      await page.getByRole('link', { name: 'Never deploy on Fridays' }).click();
      const detail = page.getByTestId('item-detail');
      await detail.waitFor();
      const provenance = await page.getByTestId('provenance').textContent();
      expect(provenance).toContain('claude-code');
      expect(provenance).toContain('planner');
      expect(provenance).toContain('release-7');
      const chain = page.getByTestId('supersession-chain').locator('li');
      expect(await chain.allTextContents()).toEqual([
        expect.stringContaining('Deploy on Fridays'),
        expect.stringContaining('Never deploy on Fridays'),
      ]);
      expect(await page.getByTestId('consumption').textContent()).toContain('openclaw');
      // Consumed by another runtime while the page shows it: the table follows.
      await call(hub.url, 'POST', `/api/context/${second.id}/consume`, { token: hub.tokens.code });
      await page.getByTestId('consumption').locator('td', { hasText: 'claude-code' }).waitFor();
      await close();
    });

    it('a conflict shows both values with Keep this; a click keeps one through the hub', async () => {
      const first = await write(hub.tokens.code, {
        type: 'decision',
        title: 'Ship on Tuesdays',
        key: 'release/day',
      });
      await write(hub.tokens.claw, {
        type: 'decision',
        title: 'Ship on Thursdays',
        key: 'release/day',
      });
      const listed = await call(hub.url, 'GET', '/api/conflicts', { token: hub.tokens.web });
      const conflict = (listed.body.conflicts as { id: string; key: string }[]).find(
        (entry) => entry.key === 'release/day',
      );
      if (!conflict) throw new Error('no conflict raised');
      // Signed in as an agent's runtime, the panel says who picks and offers no button the hub
      // would refuse.
      const agent = await signedIn(hub.tokens.claw);
      await go(agent.page, `item/${conflict.id}`);
      await agent.page.getByTestId('conflict-refusal').waitFor();
      expect(await agent.page.getByRole('button', { name: 'Keep this' }).count()).toBe(0);
      expect(await agent.page.getByTestId('conflict-refusal').textContent()).toMatch(
        /Only people keep a value, through .*signed in as openclaw/,
      );
      await agent.close();
      const { page, close } = await signedIn();
      await go(page, `item/${conflict.id}`);
      const panel = page.getByTestId('conflict');
      await panel.waitFor();
      expect(await panel.textContent()).toContain('Ship on Thursdays');
      await panel
        .locator('li', { hasText: 'Ship on Tuesdays' })
        .getByRole('button', { name: 'Keep this' })
        .click();
      await panel.locator('li', { hasText: 'Ship on Tuesdays' }).getByText('Kept').waitFor();
      const held = await call(hub.url, 'GET', '/api/context?key=release/day', {
        token: hub.tokens.code,
      });
      expect(held.body.items[0]).toMatchObject({
        title: 'Ship on Tuesdays',
        source: { runtime: 'web' },
        runtimeOptions: { ctxbus: { chosenBy: 'web', restoredFrom: first.id } },
      });
      await close();
    });

    it('the write form stores an item as the signed-in runtime', async () => {
      const { page, close } = await signedIn();
      await go(page, 'write');
      await page.getByLabel('Type').selectOption('request');
      await page.getByLabel('Urgency').selectOption('attention');
      await page.getByLabel('Title').fill('Review the retry policy');
      await page.getByLabel('Content').fill('Webhooks retry eight times; is that enough?');
      await page.getByLabel('Tags').fill('webhooks, review');
      await page.getByRole('button', { name: 'Write' }).click();
      const result = page.getByTestId('write-result');
      await result.waitFor();
      const listed = await call(hub.url, 'GET', '/api/context?type=request&tags=review', {
        token: hub.tokens.code,
      });
      expect(listed.body.items[0]).toMatchObject({
        title: 'Review the retry policy',
        urgency: 'attention',
        relevanceTags: ['webhooks', 'review'],
        source: { runtime: 'web' },
      });
      // A bad write shows the hub's reason and stores nothing.
      await page.getByLabel('Title').fill('x');
      await page.getByLabel('Expires after (seconds)').fill('999999999');
      await page.getByRole('button', { name: 'Write' }).click();
      await page.getByRole('alert').filter({ hasText: 'validation_failed' }).waitFor();
      await close();
    });

    it('the preview shows byte for byte what GET /api/context/shared gives each runtime', async () => {
      const { page, close } = await signedIn();
      await go(page, 'preview');
      for (const runtime of ['web', 'claude-code', 'openclaw']) {
        await page.getByLabel('Runtime', { exact: true }).selectOption(runtime);
        const api = await call(hub.url, 'GET', `/api/context/shared?runtime=${runtime}`, {
          token: hub.tokens.web,
        });
        expect(api.status).toBe(200);
        await page.getByTestId('preview-hash').filter({ hasText: api.body.contextHash }).waitFor();
        const shown = await page
          .getByTestId('preview-formatted')
          .evaluate((element) => element.textContent);
        expect(shown).toBe(api.body.formatted);
        expect(await page.getByTestId('preview-tokens').textContent()).toContain(
          `${api.body.totalTokens} of ${api.body.effectiveBudget}`,
        );
      }
      // A small budget trims, and the page says what.
      await page.getByLabel('Token budget').fill('60');
      await page.getByTestId('preview-trim').waitFor();
      const trimmed = await call(
        hub.url,
        'GET',
        '/api/context/shared?runtime=openclaw&tokenBudget=60',
        {
          token: hub.tokens.web,
        },
      );
      await page
        .getByTestId('preview-hash')
        .filter({ hasText: trimmed.body.contextHash })
        .waitFor();
      expect(await page.getByTestId('preview-formatted').evaluate((e) => e.textContent)).toBe(
        trimmed.body.formatted,
      );
      await close();
    });

    it('a task approved on the board reaches the worker, which runs exactly that command', async () => {
      const worker = spawnCli(['worker', '--capabilities', policyFile, '--id', 'box-1'], {
        env: { CTXBUS_URL: hub.url, CTXBUS_TOKEN: hub.tokens.code },
      });
      workers.push(worker);
      let output = '';
      worker.child.stderr?.on('data', (chunk: Buffer) => {
        output += chunk.toString();
      });
      worker.child.stdout?.on('data', (chunk: Buffer) => {
        output += chunk.toString();
      });
      const created = await call(hub.url, 'POST', '/api/tasks', {
        token: hub.tokens.claw,
        body: {
          title: 'list the project',
          requiredCapabilities: ['code_execution'],
          input: { argv: ['ls', '-a'], cwd: project },
        },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const id = created.body.task.id as string;
      let state = '';
      await waitUntil(async () => {
        state = (await call(hub.url, 'GET', `/api/tasks/${id}`, { token: hub.tokens.claw })).body
          .task.state;
        return state === 'AUTH_REQUIRED';
      }, 'the worker to ask a human').catch((error) => {
        throw new Error(`${error.message} (task ${state}); worker: ${output}`);
      });
      // A hundred and one newer tasks: what waits for a person stays on the board.
      for (let index = 0; index <= 100; index++) {
        const newer = await call(hub.url, 'POST', '/api/tasks', {
          token: hub.tokens.claw,
          body: { title: `newer ${index}`, requiredCapabilities: ['search'] },
        });
        expect(newer.status, JSON.stringify(newer.body)).toBe(201);
      }
      // Signed in as an agent's runtime (OpenClaw, the task's origin): no buttons, and why.
      const agent = await signedIn(hub.tokens.claw);
      expect(await agent.page.getByTestId('identity').textContent()).toBe('acme/openclaw');
      await go(agent.page, 'tasks');
      const agentCard = agent.page.locator(`[data-testid=task][data-id="${id}"]`);
      await agentCard.getByTestId('approval-refusal').waitFor({ timeout: 90_000 });
      expect(await agentCard.getByTestId('approval-refusal').textContent()).toMatch(
        /signed in as openclaw, which is not an approver/,
      );
      expect(await agentCard.getByRole('button', { name: 'Approve once' }).count()).toBe(0);
      await agent.close();
      const { page, close } = await signedIn();
      // The hub cannot be reached when the board first loads: it says so, then tries again.
      const listing = (url: URL) => url.pathname === '/api/tasks';
      await page.route(listing, (route) => route.abort('connectionrefused'));
      await go(page, 'tasks');
      await page.getByRole('alert').filter({ hasText: 'cannot reach the ctxbus hub' }).waitFor();
      await page.unroute(listing);
      const card = page.locator(`[data-testid=task][data-id="${id}"]`);
      await card.and(page.locator('[data-state=AUTH_REQUIRED]')).waitFor({ timeout: 90_000 });
      expect(await card.getByTestId('routing').textContent()).toMatch(/^Routing: .*claude-code/);
      expect(await card.locator('.command').textContent()).toBe(
        `["ls","-a"] (in ${JSON.stringify(project)})`,
      );
      await card.getByRole('button', { name: 'Approve once' }).click();
      await card.and(page.locator('[data-state=COMPLETED]')).waitFor({ timeout: 90_000 });
      const task = (await call(hub.url, 'GET', `/api/tasks/${id}`, { token: hub.tokens.claw })).body
        .task;
      expect(task.approval).toMatchObject({ status: 'approved', decidedBy: 'web' });
      expect(task.result.stdout).toContain('check.js');
      await card.getByRole('button', { name: 'Show history' }).click();
      const history = await card.getByTestId('task-history').textContent();
      expect(history).toContain('AUTH_REQUIRED');
      expect(history).toContain('COMPLETED');
      await close();
    });

    it('the capability matrix shows each runtime’s modes and live presence', async () => {
      const { page, close } = await signedIn();
      await go(page, 'capabilities');
      const claude = page.locator('[data-testid=capability-runtime][data-runtime=claude-code]');
      // The worker of the previous test announces itself.
      await claude
        .getByTestId('presence')
        .filter({ hasText: 'online' })
        .waitFor({ timeout: 90_000 });
      expect(await claude.getByTestId('presence').textContent()).toContain('1 worker');
      expect(await claude.textContent()).toContain('native');
      const web = page.locator('[data-testid=capability-runtime][data-runtime=web]');
      // The repository's capabilities.yaml: the web runtime runs code in a sandboxed container.
      expect(await web.textContent()).toContain('sandboxed');
      await close();
    });

    it('subscriptions show their delivery health and dead letters', async () => {
      receiver.respond = () => 500;
      const created = await call(hub.url, 'POST', '/api/subscriptions', {
        token: hub.tokens.web,
        body: { delivery: 'push', endpoint: receiver.url, label: 'failing hook' },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const item = await write(hub.tokens.code, { type: 'status', title: 'for the failing hook' });
      await waitUntil(
        async () =>
          (
            await call(
              hub.url,
              'GET',
              `/api/subscriptions/${created.body.subscription.id}/dead-letters`,
              {
                token: hub.tokens.web,
              },
            )
          ).body.deadLetters.some((letter: { itemId: string }) => letter.itemId === item.id),
        'the change to be dead-lettered',
      );
      const { page, close } = await signedIn();
      await go(page, 'subscriptions');
      const row = page.locator(
        `[data-testid=subscription][data-id="${created.body.subscription.id}"]`,
      );
      await row.waitFor();
      expect(await row.textContent()).toContain('failing hook');
      expect(await row.textContent()).toContain('dead letters');
      await row.getByRole('button').click();
      expect(await page.getByTestId('dead-letters').textContent()).toContain(item.id);
      await close();
    });

    it('shows a model switch published by `ctxbus handoff`', async () => {
      const workspace = tempDir('ctxbus-web-handoff-');
      const env = { CTXBUS_URL: hub.url, CTXBUS_TOKEN: hub.tokens.claw };
      expect((await runCli(['handoff', 'init', '--workspace', workspace], { env })).code).toBe(0);
      const beat = await runCli(
        [
          'handoff',
          'heartbeat',
          '--workspace',
          workspace,
          '--model',
          'claude-opus',
          '--task',
          'migrate the store',
          '--next',
          'run the tests',
          '--publish',
        ],
        { env },
      );
      expect(beat.code, beat.stderr).toBe(0);
      const switched = await runCli(
        [
          'handoff',
          'switch',
          '--to',
          'gpt-5',
          '--reason',
          'usage limit',
          '--workspace',
          workspace,
          '--publish',
        ],
        { env },
      );
      expect(switched.code, switched.stderr).toBe(0);
      const { page, close } = await signedIn();
      await go(page, 'handoff');
      const entry = page.getByTestId('handoff');
      await entry.first().waitFor();
      expect(await entry.count()).toBe(1);
      expect(await entry.textContent()).toContain('Switched claude-opus -> gpt-5');
      expect(await entry.textContent()).toContain('migrate the store');
      await close();
    });

    it('shows each blackboard with the latest value of its entries, and the persistent resources', async () => {
      const client = createClient({ url: hub.url, token: hub.tokens.code });
      const board = new Blackboard({
        client,
        board: { scope: 'thread', id: 'release-7' },
        agentId: 'planner',
      });
      await board.set('plan', { step: 1 });
      await board.set('plan', { step: 2 });
      await board.set('owner', 'alice');
      await new PersistentResources({ client }).put('runbooks/deploy', {
        url: 'https://wiki/deploy',
      });
      const { page, close } = await signedIn();
      await go(page, 'boards');
      const shown = page.locator('[data-testid=board][data-board="thread release-7"]');
      await shown.waitFor();
      expect(await shown.locator('tr[data-entry=plan] code').textContent()).toBe('{"step":2}');
      expect(await shown.locator('tr[data-entry=plan]').textContent()).toContain(
        'claude-code/planner',
      );
      expect(await shown.locator('tr[data-entry]').count()).toBe(2);
      expect(await page.locator('tr[data-entry="runbooks/deploy"]').textContent()).toContain(
        'https://wiki/deploy',
      );
      await close();
    });

    it('a page on an origin given to --cors-origin reads the API and the stream; any other origin cannot', async () => {
      const context = await browser.newContext();
      const page = await context.newPage();
      const readFrom = async (origin: string) => {
        await page.goto(origin);
        return page.evaluate(
          async ({ url, token }) => {
            try {
              const headers = { authorization: `Bearer ${token}` };
              const listed = await (await fetch(`${url}/api/context?limit=1`, { headers })).json();
              const controller = new AbortController();
              const stream = await fetch(`${url}/api/stream`, {
                headers,
                signal: controller.signal,
              });
              const type = stream.headers.get('content-type');
              controller.abort();
              return `read ${listed.items.length} item, stream ${type}`;
            } catch (error) {
              return `refused: ${(error as Error).name}`;
            }
          },
          { url: hub.url, token: hub.tokens.web },
        );
      };
      expect(await readFrom(allowedApp.origin)).toBe('read 1 item, stream text/event-stream');
      expect(await readFrom(otherApp.origin)).toBe('refused: TypeError');
      await context.close();
    });

    it('has no serious or critical accessibility violations (axe-core), and fits a phone; screenshots of each view', async () => {
      mkdirSync(SCREENSHOTS, { recursive: true });
      // A long unbroken title (a URL, a hash) in the feed must wrap, not widen the page.
      const written = await call(hub.url, 'POST', '/api/context', {
        token: hub.tokens.web,
        body: { type: 'discovery', title: `https://example.com/${'a1b2c3d4'.repeat(30)}` },
      });
      expect(written.status).toBe(201);
      const views = [
        'feed',
        'write',
        'preview',
        'tasks',
        'capabilities',
        'subscriptions',
        'handoff',
        'boards',
        'insights',
        'analytics',
        // The item itself: its title is the page's heading.
        `item/${written.body.items[0].id}`,
      ];
      for (const [size, viewport] of Object.entries({ desktop: DESKTOP, phone: PHONE })) {
        const { page, close } = await signedIn(hub.tokens.web, viewport);
        for (const view of views) {
          await go(page, view);
          // Views that load from the hub settle when their busy markers are gone.
          await waitUntil(
            async () => (await page.locator('[aria-busy=true]').count()) === 0,
            `${view} to load`,
          );
          // Through the DevTools protocol: the page's CSP forbids inline scripts, rightly.
          await page.evaluate(AXE_SOURCE);
          const violations = await page.evaluate(async () => {
            const result = await (
              window as unknown as {
                axe: {
                  run(): Promise<{
                    violations: {
                      id: string;
                      impact: string | null;
                      nodes: { target: unknown }[];
                    }[];
                  }>;
                };
              }
            ).axe.run();
            return result.violations
              .filter(
                (violation) => violation.impact === 'serious' || violation.impact === 'critical',
              )
              .map(
                (violation) =>
                  `${violation.id}: ${JSON.stringify(violation.nodes.map((node) => node.target))}`,
              );
          });
          expect(violations, `${view} at ${size} width`).toEqual([]);
          if (size === 'phone') {
            const overflow = await page.evaluate(
              () => document.documentElement.scrollWidth - innerWidth,
            );
            expect(overflow, `${view} scrolls sideways on a phone`).toBeLessThanOrEqual(0);
          }
          await page.screenshot({
            path: join(SCREENSHOTS, `${view.split('/')[0]}-${size}.png`),
            fullPage: true,
          });
        }
        await close();
      }
    });
  },
);
