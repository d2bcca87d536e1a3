// The dashboard's live feed: a real hub serves the built page, headless Chromium (the
// machine's, through playwright-core) shows it, and a runtime writes over REST. Timed: the
// write (before the POST) -> the item's row in the page's DOM, stamped by a MutationObserver
// in the page (the hub, the page and this process share the machine's clock). Also the
// dashboard's weight as the browser downloads it (gzip).

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { HubProcess } from '@ctxbus/test-kit';
import { CLI, runtimeToken } from '@ctxbus/test-kit';
import { browserUnavailable, launchChromium } from '@ctxbus/web/testing';
import type { Row } from './stats.ts';
import { ms, percentile } from './stats.ts';

const BUNDLE_BUDGET_KB = 200;

/** The built dashboard the CLI ships (dist/web beside the CLI's bundle), gzipped, in KB. */
function bundleKb(): number {
  const root = join(CLI, '../web');
  let total = 0;
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else total += gzipSync(readFileSync(path), { level: 9 }).length;
    }
  };
  walk(root);
  return total / 1024;
}

export async function benchDashboard(
  hub: HubProcess,
  items: number,
  log: (line: string) => void,
): Promise<Row[]> {
  const kb = bundleKb();
  const size: Row = {
    section: 'dashboard',
    metric: 'bundle, gzipped',
    value: `${kb.toFixed(1)} KB`,
    target: `<= ${BUNDLE_BUDGET_KB} KB`,
    ok: kb <= BUNDLE_BUDGET_KB,
  };
  const unavailable = browserUnavailable();
  if (unavailable) {
    log(`dashboard: skipped the browser part: ${unavailable}`);
    return [
      size,
      { section: 'dashboard', metric: 'write -> DOM', value: `skipped: ${unavailable}` },
    ];
  }
  const browser = await launchChromium();
  try {
    const page = await browser.browser.newPage();
    await page.goto(hub.url);
    await page.getByLabel('Runtime token').fill(await runtimeToken(hub, 'bench', 'web'));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByTestId('live-status').filter({ hasText: 'live' }).waitFor();
    // Stamps each title the moment its row enters the DOM.
    await page.evaluate(() => {
      const seen = new Map<string, number>();
      (window as unknown as { seen: Map<string, number> }).seen = seen;
      new MutationObserver(() => {
        const now = Date.now();
        for (const element of document.querySelectorAll('[data-testid=feed-item] .item-title')) {
          const title = element.textContent ?? '';
          if (!seen.has(title)) seen.set(title, now);
        }
      }).observe(document.body, { childList: true, subtree: true, characterData: true });
    });
    const writer = await runtimeToken(hub, 'bench', 'claude-code');
    log(`dashboard: ${items} items, write over REST -> row in Chromium's DOM`);
    const times: number[] = [];
    for (let index = -3; index < items; index++) {
      const title = `Dashboard bench ${index}`;
      const started = Date.now();
      const response = await fetch(`${hub.url}/api/context`, {
        method: 'POST',
        headers: { authorization: `Bearer ${writer}`, 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'status', title }),
      });
      if (!response.ok)
        throw new Error(`write failed: ${response.status} ${await response.text()}`);
      const seenAt = await page.waitForFunction(
        (wanted) => (window as unknown as { seen: Map<string, number> }).seen.get(wanted),
        title,
        { polling: 'raf', timeout: 10_000 },
      );
      if (index >= 0) times.push(((await seenAt.jsonValue()) as number) - started);
    }
    const p99 = percentile(times, 99);
    return [
      size,
      { section: 'dashboard', metric: 'write -> DOM p50', value: ms(percentile(times, 50)) },
      {
        section: 'dashboard',
        metric: 'write -> DOM p99',
        value: ms(p99),
        target: '<= 150 ms',
        ok: p99 <= 150,
      },
    ];
  } finally {
    await browser.close();
  }
}
