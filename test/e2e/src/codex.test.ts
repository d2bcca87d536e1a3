import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { CliRun, HubProcess } from '@ctxbus/test-kit';
import {
  call,
  openStream,
  removeDir,
  runCli,
  runtimeToken,
  spawnCli,
  startHubProcess,
  TEST_WAIT_MS,
  tempDir,
} from '@ctxbus/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type {
  ResponsesRequest,
  ScriptedResponsesModel,
  ScriptedResponsesReply,
} from './scripted-responses-model.js';
import {
  functionOutputs,
  requestText,
  startScriptedResponsesModel,
  toolNames,
} from './scripted-responses-model.js';

// The real Codex CLI from npm (`codex exec`, non-interactive) with ctxbus installed by the real
// `ctxbus install codex` (hooks trusted through Codex's app-server, the MCP server through
// `codex mcp add`), against a real `ctxbus serve`, the model played by a local server speaking
// the Responses API. A task Codex creates with task_create runs on a real `ctxbus worker` holding
// Codex's token (the repository's capabilities.yaml: Codex runs code natively, so its tasks go
// to its workers), and Codex reads the result with task_status. Skips, saying why, when the
// binary is missing, unless CTXBUS_REQUIRE_CODEX=1 (CI), where it fails instead.

const CODEX = resolve(import.meta.dirname, '../node_modules/.bin/codex');
/** The repository's capabilities.yaml (Codex runs code natively: its tasks go to its workers). */
const CAPABILITIES = resolve(import.meta.dirname, '../../../capabilities.yaml');
const required = process.env.CTXBUS_REQUIRE_CODEX === '1';
const missing = existsSync(CODEX) ? null : `no Codex CLI at ${CODEX}: run pnpm install`;
const codexIt = missing && !required ? it.skip : it;
const because = missing ? ` (skipped: ${missing})` : '';

let reply: (request: ResponsesRequest, index: number) => ScriptedResponsesReply = () => ({
  text: 'ok',
});
let model: ScriptedResponsesModel;
let hub: HubProcess;
let claudeToken: string;
let home: string;
let project: string;
/** The checkout on the machine of Codex's worker, under its one root. */
let checkout: string;
let worker: CliRun | undefined;

/** Codex's and ctxbus's state for this file: all under the temporary HOME. */
const env = () => ({
  PATH: process.env.PATH,
  HOME: home,
  CODEX_HOME: join(home, '.codex'),
  CTXBUS_CONFIG_DIR: join(home, 'ctxbus-config'),
  CONTEXT_BUS_CONFIG: join(home, 'ctxbus-config', 'context-bus', 'config.yaml'),
});

interface CodexRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `codex exec <prompt>` in the project, the model played by the scripted server. */
function runCodex(prompt: string): Promise<CodexRun> {
  return new Promise((resolvePromise, reject) => {
    // Codex starts MCP servers beside the first turn and does not wait for them: on this loaded
    // CI machine the ctxbus server's Node start can lose that race, and the turn runs without
    // its tools (seen: task_create not offered). `required` makes Codex wait for it to
    // initialize (a person's install leaves it off: a missing ctxbus must not block Codex).
    const slowMachine = [
      '-c',
      'mcp_servers.ctxbus.startup_timeout_sec=300',
      '-c',
      'mcp_servers.ctxbus.required=true',
    ];
    const child = spawn(CODEX, ['exec', ...slowMachine, '--skip-git-repo-check', prompt], {
      cwd: project,
      env: env(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`codex exec timed out; stderr: ${stderr}`));
    }, 240_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
  });
}

/** `ctxbus <args>` with this file's HOME, Codex home and credentials. */
const ctxbus = (args: string[]) => runCli(args, { env: env(), timeoutMs: 240_000 });

/** The requests of the newest run (they come after `from`), as one text. */
const sentSince = (from: number) =>
  model.requests
    .slice(from)
    .map((request) => requestText(request))
    .join('\n');

beforeAll(async () => {
  if (missing && !required) return;
  model = await startScriptedResponsesModel((request, index) => reply(request, index));
  hub = await startHubProcess({ args: ['--capabilities', CAPABILITIES] });
  claudeToken = await runtimeToken(hub, 'acme', 'claude-code');
  home = tempDir('ctxbus-e2e-codex-home-');
  project = join(home, 'project');
  mkdirSync(join(home, '.codex'), { recursive: true });
  mkdirSync(project, { recursive: true });
  checkout = join(home, 'box', 'invoices');
  mkdirSync(checkout, { recursive: true });
  writeFileSync(
    join(checkout, 'report.js'),
    "console.log('invoice tests passed (marker t45k-ran) in', process.cwd());\n",
  );
  // The model provider: the scripted server, speaking the Responses API.
  writeFileSync(
    join(home, '.codex', 'config.toml'),
    [
      'model = "fake-model"',
      'model_provider = "scripted"',
      '',
      '[model_providers.scripted]',
      'name = "scripted"',
      `base_url = "${model.baseUrl}"`,
      'wire_api = "responses"',
      '',
    ].join('\n'),
  );
  const installed = await ctxbus([
    'install',
    'codex',
    '--codex',
    CODEX,
    '--url',
    hub.url,
    '--admin-token',
    hub.adminToken ?? '',
    '--team',
    'acme',
  ]);
  expect(installed.code, installed.stdout + installed.stderr).toBe(0);
  expect(installed.stdout).toContain('with a new token for acme/codex');
}, 300_000);

afterAll(async () => {
  worker?.child.kill('SIGKILL');
  await model?.close();
  await hub?.stop();
  if (home) removeDir(home);
  if (hub) removeDir(hub.dataDir);
});

describe(`Codex with ctxbus installed${because}`, () => {
  codexIt(
    'keeps the token out of Codex files; install again changes nothing; Codex lists the server and trusts the hooks',
    async () => {
      const config = readFileSync(join(home, '.codex', 'config.toml'), 'utf8');
      const hooks = readFileSync(join(home, '.codex', 'hooks.json'), 'utf8');
      const saved = readFileSync(join(home, 'ctxbus-config', 'credentials.json'), 'utf8');
      const token = (
        JSON.parse(saved) as { hubs: Record<string, { runtimes: { codex: { token: string } } }> }
      ).hubs[new URL(hub.url).origin]?.runtimes.codex.token;
      expect(token).toBeTruthy();
      expect(config).not.toContain(token);
      expect(hooks).not.toContain(token);
      expect(config).toContain('[mcp_servers.ctxbus]');
      expect(config).toMatch(/trusted_hash = "sha256:/);

      // ctxbus doctor reads the install through Codex's own tools (codex on PATH).
      const doctor = await runCli(['doctor', '--url', hub.url], {
        env: { ...env(), PATH: `${resolve(CODEX, '..')}:${process.env.PATH}` },
      });
      expect(doctor.stdout).toMatch(
        /Codex.*4 hooks, trusted, and the MCP server, token acts as acme\/codex/,
      );

      const again = await ctxbus(['install', 'codex', '--codex', CODEX, '--url', hub.url]);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toContain('nothing changed');
      expect(readFileSync(join(home, '.codex', 'config.toml'), 'utf8')).toBe(config);
      expect(readFileSync(join(home, '.codex', 'hooks.json'), 'utf8')).toBe(hooks);

      // A config.toml Codex cannot parse: one line naming it, exit 2, no token minted for it.
      const brokenHome = join(home, 'broken-codex');
      mkdirSync(brokenHome, { recursive: true });
      writeFileSync(join(brokenHome, 'config.toml'), 'model = "gpt-5"\n[mcp_servers.docs\n');
      const tokens = async () =>
        (await call(hub.url, 'GET', '/api/admin/tokens', { token: hub.adminToken ?? '' })).body
          .tokens.length;
      const before = await tokens();
      const broken = await ctxbus([
        ...['install', 'codex', '--codex', CODEX, '--codex-home', brokenHome, '--url', hub.url],
        ...['--admin-token', hub.adminToken ?? '', '--team', 'beta'],
      ]);
      expect(broken.code, broken.stdout + broken.stderr).toBe(2);
      expect(broken.stderr.trim()).toMatch(
        /^ctxbus: error: Codex cannot read its configuration: .*broken-codex\/config\.toml:2:\d+: [^\n]+; fix it, then run this again$/,
      );
      expect(await tokens()).toBe(before);
    },
  );

  codexIt(
    "puts a decision written in Claude Code into Codex's next model request, and never a private item",
    async () => {
      for (const body of [
        {
          type: 'decision',
          title: 'Invoices use UTC timestamps (marker c0d3)',
          content: 'Agreed.',
        },
        {
          type: 'discovery',
          title: 'Private scratch of Claude Code (marker p71v)',
          content: 'only mine',
          visibility: 'private',
        },
      ]) {
        const written = await call(hub.url, 'POST', '/api/context', { token: claudeToken, body });
        expect(written.status, JSON.stringify(written.body)).toBe(201);
      }
      reply = () => ({ text: 'Noted: UTC it is.\n\nDecision: store invoice totals in cents' });
      const from = model.requests.length;
      const run = await runCodex('What did the team decide about invoices?');
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain('Noted: UTC it is.');
      const sent = sentSince(from);
      expect(sent).toContain('Invoices use UTC timestamps (marker c0d3)');
      expect(sent).toContain('not instructions');
      expect(model.requests.map((request) => requestText(request)).join('\n')).not.toContain(
        'p71v',
      );
    },
  );

  codexIt('records a decision Codex states on the bus, from codex', async () => {
    const decisions = await call(hub.url, 'GET', '/api/context?type=decision&runtime=codex', {
      token: claudeToken,
    });
    expect(decisions.status).toBe(200);
    expect(decisions.body.items.map((item: { title: string }) => item.title)).toContain(
      'store invoice totals in cents',
    );
  });

  let taskId = '';
  codexIt(
    "creates a task through the ctxbus MCP tool task_create, for Codex's workers",
    async () => {
      let offered: string[] = [];
      reply = (request) => {
        if (functionOutputs(request).length > 0) return { text: 'Asked the team to run it.' };
        offered = toolNames(request);
        return {
          functionCall: {
            namespace: 'mcp__ctxbus',
            name: 'task_create',
            arguments: {
              title: 'Run the invoice migration tests (marker t45k)',
              requiredCapabilities: ['code_execution'],
              input: { argv: ['node', 'report.js'], cwd: checkout },
            },
          },
        };
      };
      const run = await runCodex('Ask a machine that can to run the invoice tests.');
      expect(run.code, run.stderr).toBe(0);
      expect(offered, `${offered.join(', ')}\n${run.stderr.slice(-1500)}`).toContain(
        'mcp__ctxbus/task_create',
      );
      const output = functionOutputs(model.requests.at(-1) ?? { input: [] }).join(' ');
      expect(output, output).toContain('t45k');
      const tasks = await call(hub.url, 'GET', '/api/tasks', { token: claudeToken });
      expect(tasks.status).toBe(200);
      const created = (
        tasks.body.tasks as { id: string; title: string; origin: string; targetRuntime: string }[]
      ).find((task) => task.title.includes('t45k'));
      expect(created).toMatchObject({ origin: 'codex', targetRuntime: 'codex' });
      taskId = created?.id ?? '';
      expect(output).toContain(taskId);
    },
  );

  codexIt(
    "runs the task Codex created on a `ctxbus worker`; Codex's next turn reads the result",
    async () => {
      expect(taskId, 'the task_create test ran first').not.toBe('');
      // The worker machine's own policy: it runs Codex's code_execution tasks, trusts Codex
      // (standard trust), and allows exactly this command in its one root.
      const policy = join(home, 'box', 'capabilities.yaml');
      writeFileSync(
        policy,
        [
          'version: 1',
          'runtimes:',
          '  codex:',
          '    description: Codex on this box',
          '    capabilities:',
          '      code_execution: { mode: native }',
          'remote_execution:',
          '  allow: ["node report.js"]',
          `  workdir: ${checkout}`,
        ].join('\n'),
      );
      const stream = openStream(hub.url, claudeToken, { query: 'tags=task' });
      await stream.ready;
      // The token `ctxbus install codex` saved for acme/codex: the worker takes codex's tasks.
      worker = spawnCli(
        ['worker', '--url', hub.url, '--runtime', 'codex', '--capabilities', policy, '--id', 'box'],
        { env: env() },
      );
      const ended = stream.waitFor(
        () =>
          stream
            .items()
            .some(
              (event) =>
                event.item.scopeKey === `task:${taskId}` &&
                ['COMPLETED', 'FAILED'].includes(event.item.runtimeOptions.task.state),
            ),
        TEST_WAIT_MS,
      );
      const died = worker.done.then(({ code, stderr }) => {
        throw new Error(`ctxbus worker exited (${code}) before the task ended: ${stderr}`);
      });
      await Promise.race([ended, died]);
      stream.close();
      const read = await call(hub.url, 'GET', `/api/tasks/${taskId}`, { token: claudeToken });
      expect(read.body.task, JSON.stringify(read.body.task)).toMatchObject({
        state: 'COMPLETED',
        lease: null,
        result: { argv: ['node', 'report.js'], exitCode: 0 },
      });
      expect(read.body.task.result.stdout).toBe(
        `invoice tests passed (marker t45k-ran) in ${checkout}\n`,
      );

      // Codex's next turn: the model asks task_status, and reads the worker's output (an ended
      // task leaves the injected context's active tasks: the tool is how an agent follows it).
      reply = (request) => {
        if (functionOutputs(request).length > 0) return { text: 'The invoice tests passed.' };
        return {
          functionCall: {
            namespace: 'mcp__ctxbus',
            name: 'task_status',
            arguments: { taskId },
          },
        };
      };
      const run = await runCodex('Did the invoice tests pass?');
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain('The invoice tests passed.');
      const status = functionOutputs(model.requests.at(-1) ?? { input: [] }).join(' ');
      expect(status, status).toContain('COMPLETED');
      expect(status).toContain('t45k-ran');
    },
  );

  codexIt(
    "gives Codex's first turn after `ctxbus handoff switch --to codex` the resume note",
    async () => {
      const beat = await ctxbus([
        'handoff',
        'heartbeat',
        '--model',
        'claude-opus',
        '--action',
        'Migrated the invoices table',
        '--next',
        'Backfill the ledger (marker r3sm)',
        '--workspace',
        project,
      ]);
      expect(beat.code, beat.stderr).toBe(0);
      const switched = await ctxbus([
        'handoff',
        'switch',
        '--to',
        'codex',
        '--reason',
        'opus at 95%',
        '--workspace',
        project,
      ]);
      expect(switched.code, switched.stderr).toBe(0);
      reply = () => ({ text: 'Picking up the backfill.' });
      const from = model.requests.length;
      const run = await runCodex('Carry on.');
      expect(run.code, run.stderr).toBe(0);
      const sent = sentSince(from);
      expect(sent).toContain('Model switch (ctxbus handoff)');
      expect(sent).toContain('Backfill the ledger (marker r3sm)');
      // Told once: the next session in the workspace does not get it again.
      const next = model.requests.length;
      const later = await runCodex('And now?');
      expect(later.code, later.stderr).toBe(0);
      expect(sentSince(next)).not.toContain('Model switch (ctxbus handoff)');
    },
  );

  codexIt(
    'uninstall removes the hooks, their trust and the MCP server, and nothing else',
    async () => {
      const saved = () =>
        (
          JSON.parse(readFileSync(join(home, 'ctxbus-config', 'credentials.json'), 'utf8')) as {
            hubs: Record<string, { runtimes?: { codex?: { token: string } } }>;
          }
        ).hubs[new URL(hub.url).origin]?.runtimes?.codex?.token;
      const token = saved() ?? '';
      const removed = await ctxbus([
        ...['install', 'codex', '--codex', CODEX, '--uninstall'],
        ...['--url', hub.url, '--admin-token', hub.adminToken ?? ''],
      ]);
      expect(removed.code, removed.stderr).toBe(0);
      // Its token is revoked on the hub and forgotten here.
      expect(removed.stdout).toMatch(/revoked acme\/codex \(tok_/);
      expect((await call(hub.url, 'GET', '/api/context', { token })).status).toBe(401);
      expect(saved()).toBeUndefined();
      const config = readFileSync(join(home, '.codex', 'config.toml'), 'utf8');
      expect(config).not.toContain('mcp_servers.ctxbus');
      expect(config).not.toContain('trusted_hash');
      expect(config).toContain('[model_providers.scripted]');
      expect(existsSync(join(home, '.codex', 'hooks.json'))).toBe(false);
    },
  );
});
