import { call, useHubProcess } from '@ctxbus/test-kit';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LaunchedBrowser } from './testing/browser.js';
import { browserUnavailable, launchChromium } from './testing/browser.js';

// The dashboard's Analytics view in Chromium against a real `ctxbus serve` (issue 27, part 13;
// seed 000, phase 3: "Context analytics (what context is used, what's stale)"): runtimes use
// items over REST as their hooks and tools do, and the page shows it per runtime, per day, the
// most used and never-used items; it follows new use, filters by runtime, and shows a private
// item to its own runtime only. Signing in and the Preview view are looks, not injections.

const unavailable = browserUnavailable();

describe.skipIf(unavailable !== null)(
  `the Analytics view in Chromium${unavailable ? ` (skipped: ${unavailable})` : ''}`,
  () => {
    const hub = useHubProcess({
      tokens: {
        web: ['acme', 'web'],
        code: ['acme', 'claude-code'],
        claw: ['acme', 'openclaw'],
        globex: ['globex', 'claude-code'],
      },
    });
    let launched: LaunchedBrowser;
    let browser: Browser;
    beforeAll(async () => {
      launched = await launchChromium();
      browser = launched.browser;
    });
    afterAll(async () => {
      await launched?.close();
    });

    async function write(token: string, body: Record<string, unknown>) {
      const response = await call(hub.url, 'POST', '/api/context', { token, body });
      expect(response.status, JSON.stringify(response.body)).toBe(201);
      return response.body.items[0] as { id: string };
    }
    const search = (token: string, query: string) =>
      call(hub.url, 'POST', '/api/context/search', { token, body: { query } });

    async function analyticsPage(
      token: string,
    ): Promise<{ page: Page; close: () => Promise<void> }> {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      await page.goto(hub.url);
      await page.getByLabel('Runtime token').fill(token);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByTestId('live-status').filter({ hasText: 'live' }).waitFor();
      await page.getByRole('link', { name: 'Analytics' }).click();
      await page.getByTestId('analytics-report').waitFor();
      return { page, close: () => context.close() };
    }

    const runtimeRow = (page: Page, runtime: string) =>
      page.locator(`[data-testid=analytics-runtimes] tr[data-runtime="${runtime}"] td`);

    it('shows what each runtime used, per day, and what nobody used; follows new use', async () => {
      const decision = await write(hub.tokens.code, {
        type: 'decision',
        title: 'Run migrations before deploys',
      });
      const note = await write(hub.tokens.code, {
        type: 'discovery',
        title: 'Scratch list of flaky tests',
        visibility: 'private',
      });
      await write(hub.tokens.globex, { type: 'decision', title: 'Globex keeps Redis' });
      // Claude Code's hook injects its bundle; OpenClaw finds the decision and acts on it.
      expect(
        (await call(hub.url, 'GET', '/api/context/shared', { token: hub.tokens.code })).status,
      ).toBe(200);
      expect((await search(hub.tokens.claw, 'migrations deploys')).body.results).toHaveLength(1);
      await call(hub.url, 'POST', `/api/context/${decision.id}/consume`, {
        token: hub.tokens.claw,
      });
      const alert = await write(hub.tokens.claw, {
        type: 'alert',
        title: 'Certificate expires in 9 days',
      });

      const { page, close } = await analyticsPage(hub.tokens.web);
      try {
        await expect
          .poll(() => runtimeRow(page, 'openclaw').allTextContents())
          .toEqual(['0', '1', '1', '1']);
        // Signing the dashboard in (a preview) injected nothing into web.
        expect(
          await page.locator('[data-testid=analytics-runtimes] tr[data-runtime="web"]').count(),
        ).toBe(0);
        const top = page.locator(`[data-testid=analytics-top] tr[data-id="${decision.id}"]`);
        await expect.poll(() => top.locator('td').nth(1).textContent()).toBe('1');
        expect(await top.locator('td').nth(3).textContent()).toBe('claude-code, openclaw');
        await page
          .locator(`[data-testid=analytics-never-used] li[data-id="${alert.id}"]`)
          .waitFor();
        const today = new Date().toISOString().slice(0, 10);
        const day = page.locator(`[data-testid=analytics-daily] tr[data-day="${today}"] td`);
        expect((await day.allTextContents()).slice(1, 3)).toEqual(['1', '1']);
        expect(await page.locator('[data-testid=analytics-daily] tbody tr').count()).toBe(7);
        await expect
          .poll(() => page.getByTestId('analytics-stale-rule').textContent())
          .toContain('14 days');
        // The private note is Claude Code's alone; Globex's item is another team's.
        const text = (await page.locator('main').textContent()) ?? '';
        expect(text).not.toContain('Scratch list of flaky tests');
        expect(text).not.toContain('Globex keeps Redis');

        // New use shows without a reload: OpenClaw searches again; a write moves the bus.
        await search(hub.tokens.claw, 'migrations deploys');
        await write(hub.tokens.claw, { type: 'discovery', title: 'Staging is green again' });
        await expect
          .poll(() => runtimeRow(page, 'openclaw').allTextContents())
          .toEqual(['0', '1', '2', '1']);

        // One runtime's use only.
        await page.getByLabel('Runtime', { exact: true }).selectOption('openclaw');
        await expect
          .poll(() => page.getByTestId('analytics-totals').textContent())
          .toMatch(/openclaw only: 0 injected, 1 consumed, 2 searched\./);
        expect(await page.locator('[data-testid=analytics-runtimes] tbody tr').count()).toBe(1);
        // A 30-day window.
        await page.getByLabel('Days', { exact: true }).selectOption('30');
        await expect
          .poll(() => page.locator('[data-testid=analytics-daily] tbody tr').count())
          .toBe(30);

        // An item opens from the report.
        await top.getByRole('link').click();
        await page
          .locator('#view-title')
          .filter({ hasText: 'Run migrations before deploys' })
          .waitFor();
      } finally {
        await close();
      }

      // Claude Code's own view holds its private note (it was in its bundle, or it finds it).
      await search(hub.tokens.code, 'scratch flaky tests');
      const own = await analyticsPage(hub.tokens.code);
      try {
        await own.page.locator(`[data-testid=analytics-top] tr[data-id="${note.id}"]`).waitFor();
        expect(await own.page.locator('main').textContent()).toContain(
          'Scratch list of flaky tests',
        );
      } finally {
        await own.close();
      }
    });
  },
);
