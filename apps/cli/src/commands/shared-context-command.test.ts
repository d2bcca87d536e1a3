import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createClient } from '@ctxbus/client';
import {
  appendFeedback,
  bootstrapSharedContext,
  sharedContextPaths,
  writeAgentOutput,
} from '@ctxbus/shared-context';
import {
  removeDir,
  runCli,
  spawnCli,
  tempDir,
  useHubProcess,
  waitFor,
  waitUntil,
} from '@ctxbus/test-kit';
import { afterAll, describe, expect, it } from 'vitest';
import { llmFromEnvironment, parseDateOption } from './shared-context.js';

// `ctxbus shared-context` run as the real command, on a temporary directory and a real hub.

const hub = useHubProcess({ tokens: { bridge: ['acme', 'openclaw'] } });
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) removeDir(dir);
});
const fresh = () => {
  const dir = tempDir('ctxbus-sc-cli-');
  dirs.push(dir);
  return join(dir, 'shared-context');
};

// Each run starts a Node process with the whole CLI: seconds, not milliseconds.
describe('ctxbus shared-context', () => {
  it('init creates the directory once', async () => {
    const dir = fresh();
    const first = await runCli(['shared-context', 'init', '--dir', dir]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/^created in .*: \., agent-outputs\/, staging\//);
    expect(readFileSync(join(dir, 'priorities.md'), 'utf8')).toContain('## CANONICAL (curator)');
    const second = await runCli(['shared-context', 'init', '--dir', dir]);
    expect(second.stdout).toBe(`${dir} is complete; nothing to create\n`);
  });

  it('curate, cross-signals and weekly write their files for the given day', async () => {
    const dir = fresh();
    const paths = sharedContextPaths({ dir });
    bootstrapSharedContext(paths);
    const now = new Date('2026-02-04T09:00:00Z');
    writeAgentOutput(paths, { agent: 'alpha', title: 'One', body: 'x', entities: ['Acme'], now });
    writeAgentOutput(paths, { agent: 'beta', title: 'Two', body: 'y', entities: ['acme'], now });
    appendFeedback(paths, {
      timestamp: now.toISOString(),
      agent: 'ada',
      verdict: 'approved',
      subject: 'One',
    });

    const curate = await runCli([
      'shared-context',
      'curate',
      '--dir',
      dir,
      '--date',
      '2026-02-04',
      '--json',
    ]);
    expect(curate.code, curate.stderr).toBe(0);
    expect(JSON.parse(curate.stdout)).toMatchObject({
      date: '2026-02-04',
      roundtable: 'roundtable/2026-02-04.md',
      feedbackRolled: 1,
      warnings: [],
    });
    expect(readFileSync(join(dir, 'roundtable', '2026-02-04.md'), 'utf8')).toContain(
      '- **Acme**: 2 agents (alpha, beta), 2 files',
    );

    const signals = await runCli([
      'shared-context',
      'cross-signals',
      '--dir',
      dir,
      '--date',
      '2026-02-04',
    ]);
    expect(signals.stdout).toBe(
      'Acme: alpha, beta (2 files)\n1 signals from 2 outputs; wrote cross-signals/2026-02-04.json\n',
    );

    const weekly = await runCli(['shared-context', 'weekly', '--dir', dir, '--date', '2026-02-04']);
    expect(weekly.stdout).toBe('wrote roundtable/weekly-2026-W06.md\n');
    expect(existsSync(join(dir, 'roundtable', 'weekly-2026-W06.md'))).toBe(true);

    const bad = await runCli(['shared-context', 'curate', '--dir', dir, '--date', 'tomorrow']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe('ctxbus: error: --date must be a day as YYYY-MM-DD (got "tomorrow")\n');
  });

  it('bridge publishes the directory and stops cleanly on SIGTERM', async () => {
    const dir = fresh();
    const paths = sharedContextPaths({ dir });
    bootstrapSharedContext(paths);
    writeAgentOutput(paths, {
      agent: 'alpha',
      title: 'Bridged',
      body: 'over the CLI',
      now: new Date('2026-02-04T09:00:00Z'),
    });
    const reader = createClient({ url: hub.url, token: hub.tokens.bridge });
    const bridge = spawnCli([
      'shared-context',
      'bridge',
      '--dir',
      dir,
      '--url',
      hub.url,
      '--token',
      hub.tokens.bridge,
      '--curate-at',
      '15 6 * * *',
    ]);
    await waitUntil(
      async () =>
        (await reader.list({ key: 'shared-context/agent-outputs/alpha/2026-02-04/bridged.md' }))
          .items.length === 1,
      'the bridged file on the hub',
    );
    await waitUntil(() => existsSync(join(dir, '.bridge-state.json')), 'the bridge state file');
    bridge.child.kill('SIGTERM');
    const result = await waitFor(bridge.done, 'the bridge to exit');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(
      /^bridge ready: .* <-> http:\/\/127\.0\.0\.1:\d+; curator at "15 6 \* \* \*" \(next \d{4}-/,
    );

    const once = await runCli([
      'shared-context',
      'bridge',
      '--dir',
      dir,
      '--url',
      hub.url,
      '--token',
      hub.tokens.bridge,
      '--once',
    ]);
    expect(once.stdout).toMatch(/^synced: 0 published, 0 written, last seq \d+\n$/);
    const badCron = await runCli([
      'shared-context',
      'bridge',
      '--dir',
      dir,
      '--url',
      hub.url,
      '--token',
      hub.tokens.bridge,
      '--curate-at',
      'every day',
    ]);
    expect(badCron.code).toBe(2);
    expect(badCron.stderr).toMatch(/^ctxbus: error: --curate-at: /);
  });
});

describe('ctxbus shared-context schedules and promotion', () => {
  it('bridge --curate-at runs the curator on its schedule', async () => {
    const dir = fresh();
    bootstrapSharedContext(sharedContextPaths({ dir }));
    // croner's six-field form: every second, so the first run comes at once.
    const bridge = spawnCli([
      'shared-context',
      'bridge',
      '--dir',
      dir,
      '--url',
      hub.url,
      '--token',
      hub.tokens.bridge,
      '--curate-at',
      '* * * * * *',
    ]);
    try {
      await waitUntil(
        () => existsSync(join(dir, 'roundtable', `${new Date().toISOString().slice(0, 10)}.md`)),
        "the scheduled curator's roundtable",
      );
    } finally {
      bridge.child.kill('SIGTERM');
      await waitFor(bridge.done, 'the bridge to exit');
    }
  });

  it('weekly --promote writes the summary to the hub as a keyed item', async () => {
    const dir = fresh();
    const paths = sharedContextPaths({ dir });
    bootstrapSharedContext(paths);
    const now = new Date('2026-02-04T09:00:00Z');
    appendFeedback(paths, {
      timestamp: now.toISOString(),
      agent: 'ada',
      verdict: 'approved',
      subject: 'The short digest format',
    });
    const promoted = await runCli([
      'shared-context',
      'weekly',
      '--dir',
      dir,
      '--date',
      '2026-02-04',
      '--promote',
      '--url',
      hub.url,
      '--token',
      hub.tokens.bridge,
    ]);
    expect(promoted.code, promoted.stderr).toBe(0);
    expect(promoted.stdout).toContain('promoted shared-context/weekly/2026-W06');
    const reader = createClient({ url: hub.url, token: hub.tokens.bridge });
    const found = await reader.list({ key: 'shared-context/weekly/2026-W06' });
    expect(found.items).toHaveLength(1);
    expect(found.items[0]?.content).toContain('The short digest format');
  });
});

describe('option parsing', () => {
  it('reads --date as noon UTC and the enhancer from the environment', () => {
    expect(parseDateOption('2026-02-04').toISOString()).toBe('2026-02-04T12:00:00.000Z');
    // A day that does not exist is refused, not rolled over into March.
    expect(() => parseDateOption('2026-02-30')).toThrow('--date must be a day as YYYY-MM-DD');
    expect(parseDateOption('2028-02-29').toISOString()).toBe('2028-02-29T12:00:00.000Z');
    expect(llmFromEnvironment({})).toBeUndefined();
    expect(
      llmFromEnvironment({
        CTXBUS_SHARED_CONTEXT_LLM_URL: 'http://127.0.0.1:1/v1',
        CTXBUS_SHARED_CONTEXT_LLM_MODEL: 'm',
        CTXBUS_SHARED_CONTEXT_LLM_TIMEOUT_MS: '500',
      }),
    ).toEqual({ baseUrl: 'http://127.0.0.1:1/v1', model: 'm', timeoutMs: 500 });
  });
});
