import { existsSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { chromium } from 'playwright-core';

// The real browser for the dashboard's tests and benchmark: the machine's Chromium (Debian's
// `chromium` package), driven by playwright-core, which downloads no browser of its own.

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];

/**
 * Headless, and quiet on a closed network: without the background-networking flags Chromium
 * keeps trying Google's hosts at start. No sandbox when running as root (CI containers), where
 * Chromium refuses to start with it.
 */
const ARGS = [
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

/** The Chromium to drive: $CTXBUS_CHROMIUM, else the first of the usual paths that exists. */
export function chromiumPath(): string | null {
  const chosen = process.env.CTXBUS_CHROMIUM;
  if (chosen) return existsSync(chosen) ? chosen : null;
  return CANDIDATES.find((path) => existsSync(path)) ?? null;
}

/**
 * Why the browser tests cannot run here, or null when they can. With
 * CTXBUS_REQUIRE_BROWSER=1 (CI) a missing browser is an error instead of a skip.
 */
export function browserUnavailable(): string | null {
  if (chromiumPath()) return null;
  const reason = process.env.CTXBUS_CHROMIUM
    ? `CTXBUS_CHROMIUM=${process.env.CTXBUS_CHROMIUM} does not exist`
    : `no Chromium at ${CANDIDATES.join(', ')} (apt-get install chromium, or set CTXBUS_CHROMIUM)`;
  if (process.env.CTXBUS_REQUIRE_BROWSER === '1') {
    throw new Error(`CTXBUS_REQUIRE_BROWSER=1 but ${reason}`);
  }
  return reason;
}

export interface LaunchedBrowser {
  browser: Browser;
  close(): Promise<void>;
}

/** Starts headless Chromium (playwright gives it a fresh temporary profile). */
export async function launchChromium(): Promise<LaunchedBrowser> {
  const executablePath = chromiumPath();
  if (!executablePath) throw new Error(browserUnavailable() ?? 'no Chromium');
  const browser = await chromium.launch({
    executablePath,
    headless: true,
    chromiumSandbox: process.getuid?.() !== 0,
    args: ARGS,
  });
  return { browser, close: () => browser.close() };
}
