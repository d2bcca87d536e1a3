import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { call, removeDir, runCli, startHubProcess, tempDir, waitUntil } from '@ctxbus/test-kit';
import { describe, expect, it } from 'vitest';
import { startInProcessServe, useInProcessHub } from './in-process-serve.ts';

// The capability matrix and presence in a real `ctxbus serve`: the file is loaded at start and
// reloaded when an editor saves over it; a bad edit keeps the last good matrix and /health
// says why; workers and adapters announce themselves, heartbeat, expire and leave.

const repositoryFile = join(import.meta.dirname, '../../../capabilities.yaml');

/** Saves as editors do: a temporary file renamed over the old one. */
function saveOver(file: string, text: string): void {
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, text);
  renameSync(temporary, file);
}

// The hub finds capabilities.yaml in its data directory without a flag.
const dataDir = tempDir('ctxbus-capabilities-');
const file = join(dataDir, 'capabilities.yaml');
writeFileSync(file, readFileSync(repositoryFile, 'utf8'));

const hub = useInProcessHub({
  dataDir,
  tokens: {
    code: ['acme', 'claude-code'],
    claw: ['acme', 'openclaw'],
    globex: ['globex', 'claude-code'],
  },
});

async function health() {
  const response = await call(hub.url, 'GET', '/health');
  expect(response.status).toBe(200);
  return response.body.capabilities as {
    file: string | null;
    status: string;
    digest: string | null;
    runtimes: number;
    error: { message: string; at: string } | null;
  };
}

async function capabilities(token: string) {
  const response = await call(hub.url, 'GET', '/api/capabilities', { token });
  expect(response.status).toBe(200);
  return response.body;
}

const runtimeOf = (body: any, id: string) =>
  (body.runtimes as any[]).find((runtime) => runtime.id === id);

describe('the capabilities file in a running hub', () => {
  it('loads the data directory file at start, reloads a rename-over edit, keeps the last good on a bad edit, and clears the error on a fix', async () => {
    const first = await health();
    expect(first).toMatchObject({ file, status: 'loaded', runtimes: 4, error: null });
    let view = await capabilities(hub.tokens.code);
    expect(view.runtimes.map((runtime: any) => runtime.id)).toEqual([
      'claude-code',
      'openclaw',
      'codex',
      'web',
    ]);
    expect(runtimeOf(view, 'openclaw').capabilities.code_execution).toEqual({
      mode: 'via-api',
      via: 'remote-exec',
      target: 'claude-code',
    });
    expect(view.source.digest).toBe(first.digest);

    // An edit: a fifth runtime.
    const edited = `${readFileSync(file, 'utf8')}\n`.replace(
      'runtimes:\n',
      'runtimes:\n  ci:\n    description: the CI runner\n    capabilities:\n      code_execution: { mode: native, via: sh }\n',
    );
    saveOver(file, edited);
    await waitUntil(async () => (await health()).runtimes === 5, 'the edit to load');
    const second = await health();
    expect(second.digest).not.toBe(first.digest);
    expect(second.error).toBeNull();

    // A bad edit: the mode of a capability misspelt.
    const broken = edited.replace(
      'code_execution: { mode: native, via: Bash }',
      'code_execution: { mode: natve, via: Bash }',
    );
    const badLine = broken.split('\n').findIndex((line) => line.includes('natve')) + 1;
    saveOver(file, broken);
    await waitUntil(async () => (await health()).error !== null, 'the bad edit to be reported');
    const failed = await health();
    expect(failed.error?.message).toMatch(
      new RegExp(`capabilities\\.yaml:${badLine}:\\d+: .*mode`),
    );
    expect(failed.digest).toBe(second.digest);
    expect(failed.runtimes).toBe(5);
    view = await capabilities(hub.tokens.code);
    expect(view.source.error?.message).toBe(failed.error?.message);
    expect(runtimeOf(view, 'claude-code').capabilities.code_execution.mode).toBe('native');
    expect(runtimeOf(view, 'ci')).toBeDefined();
    expect(hub.stderr()).toContain(`capabilities.yaml:${badLine}:`);

    // The fix.
    saveOver(file, edited.replace('the CI runner', 'the CI runner, fixed'));
    await waitUntil(async () => (await health()).error === null, 'the fix to clear the error');
    const fixed = await health();
    expect(fixed.digest).not.toBe(second.digest);
    view = await capabilities(hub.tokens.code);
    expect(runtimeOf(view, 'ci').description).toBe('the CI runner, fixed');
  });
});

describe("a runtime's context format is data", () => {
  it('gives a runtime the format and budget its entry declares, and a built-in runtime its own unless declared', async () => {
    const shared = async (runtime: string) => {
      const response = await call(hub.url, 'GET', `/api/context/shared?runtime=${runtime}`, {
        token: hub.tokens.code,
      });
      expect(response.status).toBe(200);
      return response.body as { format: string; tokenBudget: number; formatted: string };
    };
    // Not declared: the built-in defaults (Markdown for Claude Code, text for OpenClaw) and
    // Markdown within 4,000 tokens for anyone else.
    expect(await shared('openclaw')).toMatchObject({ format: 'text', tokenBudget: 2_000 });
    expect(await shared('aider')).toMatchObject({ format: 'markdown', tokenBudget: 4_000 });
    // Declared in the repository's file (Codex): its entry's format and budget.
    expect(await shared('codex')).toMatchObject({ format: 'markdown', tokenBudget: 2_000 });
    const declared = `${readFileSync(file, 'utf8')}\n`.replace(
      'runtimes:\n',
      'runtimes:\n  aider:\n    description: Aider\n    context: { format: text, tokenBudget: 600 }\n',
    );
    saveOver(file, declared);
    await waitUntil(async () => (await shared('aider')).format === 'text', 'the entry to load');
    const aider = await shared('aider');
    expect(aider.tokenBudget).toBe(600);
    expect(aider.formatted).toMatch(/^SHARED CONTEXT \(CTXBUS\)/);
    // A format the file does not know is refused, naming the field; the last good file stays.
    saveOver(file, declared.replace('format: text', 'format: html'));
    await waitUntil(async () => (await health()).error !== null, 'the bad format to be reported');
    expect((await health()).error?.message).toMatch(/context\.format|format/);
    expect((await shared('aider')).tokenBudget).toBe(600);
    saveOver(file, readFileSync(repositoryFile, 'utf8'));
    await waitUntil(async () => (await health()).error === null, 'the original file back');
  });
});

describe('presence in a running hub', () => {
  it('announce -> online; heartbeat; a short time to live expires; DELETE leaves', async () => {
    const announced = await call(hub.url, 'POST', '/api/presence', {
      token: hub.tokens.code,
      // Ten minutes: far longer than the CLI runs below take on a loaded machine.
      body: {
        instanceId: 'box-1',
        kind: 'worker',
        capabilities: ['code_execution'],
        capacity: 3,
        ttlSeconds: 600,
      },
    });
    expect(announced.status).toBe(200);
    expect(announced.body.runtime).toBe('claude-code');
    expect(Date.parse(announced.body.expiresAt) - Date.now()).toBeGreaterThan(20_000);
    let view = await capabilities(hub.tokens.claw);
    expect(runtimeOf(view, 'claude-code').presence).toMatchObject({
      online: true,
      workers: 1,
      capacity: 3,
      instances: [{ instanceId: 'box-1', kind: 'worker', capabilities: ['code_execution'] }],
    });

    // The CLI shows the hub's matrix with an ONLINE row.
    const shown = await runCli([
      'capabilities',
      'show',
      '--hub',
      '--url',
      hub.url,
      '--token',
      hub.tokens.claw,
    ]);
    expect(shown.code, shown.stderr).toBe(0);
    const lines = shown.stdout.split('\n');
    const columns = (line: string | undefined) => (line ?? '').split(/\s{2,}/);
    const header = columns(lines[0]);
    const onlineRow = columns(lines.find((line) => line.startsWith('ONLINE')));
    expect(header[0]).toBe('capability');
    expect(onlineRow[header.indexOf('claude-code')]).toBe('yes (1 worker)');
    expect(onlineRow[header.indexOf('openclaw')]).toBe('no');
    expect(shown.stdout).toContain(`matrix: ${file}, loaded `);
    const shownJson = JSON.parse(
      (
        await runCli([
          'capabilities',
          'show',
          '--hub',
          '--json',
          '--url',
          hub.url,
          '--token',
          hub.tokens.claw,
        ])
      ).stdout,
    );
    expect(runtimeOf(shownJson, 'claude-code').presence.workers).toBe(1);

    // A heartbeat is the same call: expiresAt moves on.
    const renewed = await call(hub.url, 'POST', '/api/presence', {
      token: hub.tokens.code,
      body: { instanceId: 'box-1', kind: 'worker', capacity: 3, ttlSeconds: 600 },
    });
    expect(Date.parse(renewed.body.expiresAt)).toBeGreaterThanOrEqual(
      Date.parse(announced.body.expiresAt),
    );

    // An adapter with a one-second time to live, never renewed, goes offline by itself.
    await call(hub.url, 'POST', '/api/presence', {
      token: hub.tokens.claw,
      body: { instanceId: 'telegram-bot', kind: 'adapter', ttlSeconds: 1 },
    });
    view = await capabilities(hub.tokens.claw);
    expect(runtimeOf(view, 'openclaw').presence.online).toBe(true);
    await waitUntil(
      async () => !runtimeOf(await capabilities(hub.tokens.claw), 'openclaw').presence.online,
      'the unrenewed adapter to expire',
    );

    const left = await call(hub.url, 'DELETE', '/api/presence/box-1', { token: hub.tokens.code });
    expect(left.status).toBe(200);
    view = await capabilities(hub.tokens.code);
    expect(runtimeOf(view, 'claude-code').presence).toMatchObject({ online: false, workers: 0 });
  });

  it('keeps teams apart, takes the runtime from the token, and refuses bad bodies with a code', async () => {
    await call(hub.url, 'POST', '/api/presence', {
      token: hub.tokens.globex,
      body: { instanceId: 'globex-box', kind: 'worker' },
    });
    const acme = await capabilities(hub.tokens.code);
    expect(runtimeOf(acme, 'claude-code').presence.instances).toEqual([]);
    const globex = await capabilities(hub.tokens.globex);
    expect(
      runtimeOf(globex, 'claude-code').presence.instances.map((i: any) => i.instanceId),
    ).toEqual(['globex-box']);

    const impostor = await call(hub.url, 'POST', '/api/presence', {
      token: hub.tokens.claw,
      body: { instanceId: 'fake-worker', kind: 'worker', runtime: 'claude-code' },
    });
    expect(impostor.status).toBe(403);
    expect(impostor.body.error.code).toBe('forbidden');
    expect(runtimeOf(await capabilities(hub.tokens.code), 'claude-code').presence.online).toBe(
      false,
    );

    for (const [body, code] of [
      [{ kind: 'worker' }, 'validation_failed'],
      [{ instanceId: 'a b', kind: 'worker' }, 'validation_failed'],
      [{ instanceId: 'a', kind: 'worker', ttlSeconds: 100_000 }, 'validation_failed'],
      ['not json', 'bad_json'],
    ] as const) {
      const response = await call(hub.url, 'POST', '/api/presence', {
        token: hub.tokens.code,
        ...(typeof body === 'string' ? { rawBody: body } : { body }),
      });
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.error.code).toBe(code);
    }
  });
});

describe('where the file comes from', () => {
  it('--capabilities and $CTXBUS_CAPABILITIES name it; a missing one stops serve with exit 2', async () => {
    const elsewhere = tempDir('ctxbus-capabilities-file-');
    const named = join(elsewhere, 'team.yaml');
    writeFileSync(named, 'version: 1\nruntimes:\n  web:\n    description: the dashboard\n');
    const byEnv = await startHubProcess({ env: { CTXBUS_CAPABILITIES: named } });
    try {
      const status = (await call(byEnv.url, 'GET', '/health')).body.capabilities;
      expect(status).toMatchObject({ file: named, status: 'loaded', runtimes: 1 });
    } finally {
      expect(await byEnv.stop()).toBe(0);
      removeDir(byEnv.dataDir);
    }
    const missing = tempDir('ctxbus-capabilities-none-');
    const result = await runCli(
      ['serve', '--port', '0', '--data', missing, '--capabilities', join(elsewhere, 'nope.yaml')],
      { env: { CTXBUS_CONFIG_DIR: join(missing, 'config') } },
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('nope.yaml does not exist');
    removeDir(missing);
    removeDir(elsewhere);
  });

  it('without a file the hub runs with an empty matrix, and loads capabilities.yaml once it appears', async () => {
    const bare = await startInProcessServe();
    try {
      const before = (await call(bare.url, 'GET', '/health')).body.capabilities;
      expect(before).toMatchObject({
        file: join(bare.dataDir, 'capabilities.yaml'),
        status: 'empty',
        runtimes: 0,
        error: null,
      });
      mkdirSync(bare.dataDir, { recursive: true });
      saveOver(join(bare.dataDir, 'capabilities.yaml'), readFileSync(repositoryFile, 'utf8'));
      await waitUntil(
        async () => (await call(bare.url, 'GET', '/health')).body.capabilities.runtimes === 4,
        'the new file to load',
      );
    } finally {
      expect(await bare.stop()).toBe(0);
      removeDir(bare.dataDir);
    }
  });
});
