import { spawn } from 'node:child_process';
import { CtxbusError, hubUnreachable } from '@ctxbus/core/light';
import type { Command } from 'commander';
import { printLine } from '../output.js';

// `ctxbus open`: the dashboard of the hub this machine talks to, in the browser. The URL never
// carries a token: the page asks for one and keeps it in the tab's session storage.

/** The command that opens a URL here: $BROWSER when set, else the platform's opener. */
export function browserCommand(
  url: string,
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): [string, string[]] {
  if (env.BROWSER) return [env.BROWSER, [url]];
  if (platform === 'darwin') return ['open', [url]];
  if (platform === 'win32') return ['cmd', ['/c', 'start', '""', url]];
  return ['xdg-open', [url]];
}

/** How long a browser ($BROWSER) has to fail at once before it counts as opened. */
const BROWSER_GRACE_MS = 1_500;

/**
 * Starts the opener. The platform's opener (xdg-open, open, start) hands the URL on and exits,
 * and says by its exit code whether anything could open it (xdg-open exits 3 on a machine with
 * no browser), so it is waited for. A browser ($BROWSER) may run on for as long as it is open:
 * it counts as opened once it has run BROWSER_GRACE_MS without failing, or exited 0 before
 * (a wrapper handing the URL to a running browser); one that exits otherwise at once (a
 * browser that cannot start here, a typo's shell) is no success. Rejects with why nothing was
 * opened.
 */
function launch(command: string, args: string[], waitForExit: boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: 'ignore', detached: !waitForExit });
    let grace: NodeJS.Timeout | undefined;
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      clearTimeout(grace);
      code === 0 ? resolve() : reject(new Error(`exited with ${code ?? signal}`));
    });
    if (waitForExit) return;
    child.once('spawn', () => {
      grace = setTimeout(() => {
        child.removeAllListeners('exit');
        child.unref();
        resolve();
      }, BROWSER_GRACE_MS);
    });
  });
}

/** Checks that the hub answers and serves its dashboard; the errors say what to do. */
async function checkDashboard(url: string): Promise<void> {
  let response: Response;
  try {
    response = await fetch(`${url}/`, { signal: AbortSignal.timeout(5_000) });
  } catch (error) {
    throw hubUnreachable(url, error);
  }
  const type = response.headers.get('content-type') ?? '';
  if (!response.ok || !type.startsWith('text/html')) {
    throw new CtxbusError(
      'not_found',
      `the hub at ${url} serves no dashboard (HTTP ${response.status}); this ctxbus was built without apps/web, or the hub is older`,
    );
  }
}

export function registerOpen(
  program: Command,
  run: (action: () => Promise<void>) => Promise<void>,
) {
  program
    .command('open')
    .description("open the hub's dashboard in your browser (sign in there with a runtime token)")
    .option('--url <url>', 'hub URL (default: $CTXBUS_URL, else the saved hub)')
    .option('--print', 'print the URL only; start no browser')
    .addHelpText(
      'after',
      `
The dashboard asks for a runtime token, for example one for the web runtime:
  ctxbus token create --team acme --runtime web
It keeps the token in that browser tab only. The browser is $BROWSER when set, else
xdg-open (Linux), open (macOS) or start (Windows).`,
    )
    .action((options: { url?: string; print?: boolean }) =>
      run(async () => {
        const { hubUrl } = await import('../hub-target.js');
        const url = hubUrl(options.url);
        await checkDashboard(url);
        const page = `${url}/`;
        if (options.print) {
          printLine(page);
          return;
        }
        const [command, args] = browserCommand(page);
        try {
          await launch(command, args, !process.env.BROWSER);
          printLine(`opened ${page} (${command})`);
        } catch (error) {
          // No browser here (a server, a container): the URL is still what the user needs.
          printLine(page);
          process.stderr.write(
            `ctxbus: could not start a browser (${command}: ${(error as Error).message}); open the URL above yourself\n`,
          );
        }
      }),
    );
}
