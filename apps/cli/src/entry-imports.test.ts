import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { removeDir, runCli, tempDir, useHubProcess } from '@ctxbus/test-kit';
import { afterAll, describe, expect, it } from 'vitest';

// The import graph of the built `ctxbus` entry (issue 26, "every command starts fast"): each
// command loads what it runs, no more. A module hook (node --import) records every module the
// real command loads; a static import of the hub, the store or the tokenizer anywhere on the
// CLI's top level shows up here. Speed itself is measured in the bench, not asserted here.

const dir = tempDir('ctxbus-entry-imports-');
afterAll(() => removeDir(dir));

const HOOK = join(dir, 'record-modules.mjs');
writeFileSync(
  HOOK,
  `import { appendFileSync } from 'node:fs';
import { registerHooks } from 'node:module';
registerHooks({
  load(url, context, next) {
    appendFileSync(process.env.CTXBUS_TEST_MODULE_LOG, url + '\\n');
    return next(url, context);
  },
});
// Node's own internals the hook does not see: undici (fetch, and node:http's lazy WebSocket
// getters, which an ESM import of node:http runs) is recorded as builtin:undici.
process.on('exit', () => {
  if (process.moduleLoadList.some((name) => name.includes('undici'))) {
    appendFileSync(process.env.CTXBUS_TEST_MODULE_LOG, 'builtin:undici\\n');
  }
});
`,
);

let runs = 0;

/** Runs the real command and returns every module URL it loaded (built-ins left out). */
async function modulesLoadedBy(args: string[], env: NodeJS.ProcessEnv = {}) {
  const log = join(dir, `modules-${runs++}.txt`);
  writeFileSync(log, '');
  const result = await runCli(args, {
    env: {
      ...env,
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ${pathToFileURL(HOOK).href}`,
      CTXBUS_TEST_MODULE_LOG: log,
    },
  });
  const modules = readFileSync(log, 'utf8')
    .split('\n')
    .filter((url) => url !== '' && !url.startsWith('node:'));
  return { result, modules };
}

/** What no command's start may load unless it uses it: each pattern names one heavy part. */
const HEAVY = {
  tokenizer: /gpt-tokenizer/,
  hub: /\/packages\/hub\/|@ctxbus\/hub/,
  store: /\/packages\/store\/|@ctxbus\/store/,
  'core root entry (loads the tokenizer)': /\/packages\/core\/dist\/index\.js$/,
  hono: /\/hono[@/]/,
  pg: /\/pg[@/]/,
  'MCP SDK': /@modelcontextprotocol/,
  "undici (Node's fetch)": /^builtin:undici$/,
};

/** What `--help` loads beyond commander and the light entries. */
const NOT_FOR_HELP = {
  ...HEAVY,
  zod: /\/zod[@/]/,
  yaml: /\/yaml[@/]/,
  'hub client (ky)': /\/ky[@/]|\/packages\/client\/dist\/index\.js$/,
  pino: /\/pino[@/]/,
};

function loadedOf(modules: string[], forbidden: Record<string, RegExp>): string[] {
  return Object.entries(forbidden)
    .filter(([, pattern]) => modules.some((url) => pattern.test(url)))
    .map(([name]) => name);
}

describe('the ctxbus entry loads what a command needs', () => {
  it('the hook sees the modules a command loads', async () => {
    // Without this, an empty log would pass every check below.
    const { result, modules } = await modulesLoadedBy(['--help']);
    expect(result.code, result.stderr).toBe(0);
    expect(modules.some((url) => url.endsWith('/apps/cli/dist/bin.js'))).toBe(true);
    expect(modules.some((url) => /\/commander[@/]/.test(url))).toBe(true);
  });

  it.each([
    [['--help']],
    [['write', '--help']],
    [['serve', '--help']],
    [['route', '--help']],
    [['capabilities', '--help']],
    [['handoff', '--help']],
  ])('ctxbus %j loads no zod, YAML parser, hub client, hub, store or tokenizer', async (args) => {
    const { result, modules } = await modulesLoadedBy(args);
    expect(result.code, result.stderr).toBe(0);
    expect(loadedOf(modules, NOT_FOR_HELP)).toEqual([]);
  });

  describe('commands that run', () => {
    const hub = useHubProcess({ tokens: { writer: ['acme', 'cli'] } });

    it('ctxbus write loads the light request only: no zod, hub client, hub, store or tokenizer', async () => {
      const { result, modules } = await modulesLoadedBy(
        ['write', '--type', 'decision', '--title', 'Imports', '--content', 'Only the client.'],
        { CTXBUS_URL: hub.url, CTXBUS_TOKEN: hub.tokens.writer },
      );
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toMatch(/^created /);
      expect(loadedOf(modules, NOT_FOR_HELP)).toEqual([]);
    });

    it('ctxbus route --explain loads the router, and no tokenizer, hub or store', async () => {
      const file = join(dir, 'capabilities.yaml');
      writeFileSync(
        file,
        `version: 1
runtimes:
  claude-code:
    description: coding agent
    capabilities:
      code_execution: { mode: native }
`,
      );
      const { result, modules } = await modulesLoadedBy([
        'route',
        '--capabilities',
        file,
        '--explain',
        '{"requiredCapabilities":["code_execution"],"origin":"claude-code"}',
      ]);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toMatch(/claude-code/);
      expect(loadedOf(modules, HEAVY)).toEqual([]);
    });
  });
});
