import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createClient } from '@ctxbus/client';
import { CtxbusError } from '@ctxbus/core/light';
import { credentialsPath, hubCredentials } from '../credentials.js';
import { findAdminToken, findHubUrl } from '../hub-target.js';
import { SERVICE_UNIT_NAME, serviceUnitPath } from '../systemd-unit.js';
import { unitProperties, userManager } from '../systemd-user.js';

// `ctxbus doctor`: checks what the first hour depends on (Node, the hub, the tokens, the
// installed adapters) and says what to fix. Read-only: it changes nothing.

const MIN_NODE = [22, 13] as const;

export interface Check {
  name: string;
  /** ok; warn: works, but something is off; fail: broken; info: not set up (fine). */
  status: 'ok' | 'warn' | 'fail' | 'info';
  detail: string;
  /** What to do about it (warn and fail). */
  fix?: string;
}

function nodeAtLeast(version: string): boolean {
  const [major = 0, minor = 0] = version.replace(/^v/, '').split('.').map(Number);
  return major > MIN_NODE[0] || (major === MIN_NODE[0] && minor >= MIN_NODE[1]);
}

function message(error: unknown): string {
  return CtxbusError.isInstance(error) || error instanceof Error ? error.message : String(error);
}

/** Checks a runtime token against the hub (a one-item read); throws what the hub answered. */
async function checkToken(url: string, token: string): Promise<void> {
  await createClient({ url, token, retries: 0 }).list({ limit: 1 });
}

/** Who a token of a runtime with a resolver is (its shared context says), e.g. acme/claude-code. */
async function whoIs(url: string, token: string): Promise<string> {
  const bundle = await createClient({ url, token, retries: 0 }).shared({
    tokenBudget: 200,
    preview: true,
  });
  return `${bundle.identity.teamId}/${bundle.identity.runtime}`;
}

async function checkHub(
  flagUrl: string | undefined,
): Promise<{ checks: Check[]; url: string | null }> {
  const checks: Check[] = [];
  let url: string | null;
  try {
    url = findHubUrl(flagUrl);
  } catch (error) {
    return { checks: [{ name: 'hub', status: 'fail', detail: message(error) }], url: null };
  }
  if (url === null) {
    checks.push({
      name: 'hub',
      status: 'fail',
      detail: 'no hub known: no --url, no CTXBUS_URL, nothing saved',
      fix: 'start one with `ctxbus serve` (it saves its URL and admin token), or pass --url',
    });
    return { checks, url };
  }
  try {
    const health = await createClient({ url, token: 'none', retries: 0 }).health();
    checks.push({
      name: 'hub',
      status: 'ok',
      detail: `${url} answers (ctxbus ${health.version}, ${health.store} store)`,
    });
  } catch (error) {
    // A hub that answers that its database is damaged says what to do itself.
    const damaged =
      CtxbusError.isInstance(error) &&
      (error.details as { details?: { reason?: unknown } } | undefined)?.details?.reason ===
        'store_damaged';
    checks.push({
      name: 'hub',
      status: 'fail',
      detail: message(error),
      ...(!damaged && {
        fix: `start it (\`ctxbus serve\`), or point at the right one with --url`,
      }),
    });
    return { checks, url: null };
  }
  const admin = findAdminToken(url, undefined);
  if (admin) {
    try {
      const tokens = await createClient({ url, token: admin, retries: 0 }).listTokens();
      checks.push({
        name: 'admin token',
        status: 'ok',
        detail: `valid (${tokens.length} active token${tokens.length === 1 ? '' : 's'})`,
      });
    } catch (error) {
      checks.push({
        name: 'admin token',
        status: 'fail',
        detail: message(error),
        fix: 'mint another offline (`ctxbus token create --admin --data DIR` with the hub stopped) and pass it with --admin-token',
      });
    }
  } else {
    checks.push({
      name: 'admin token',
      status: 'info',
      detail: `none here (flag, CTXBUS_ADMIN_TOKEN or ${credentialsPath()}): installers need --token`,
    });
  }
  const saved = hubCredentials(url);
  const token = process.env.CTXBUS_TOKEN || saved.token;
  if (token) {
    try {
      await checkToken(url, token);
      const who =
        !process.env.CTXBUS_TOKEN && saved.teamId && saved.runtime
          ? `, acts as ${saved.teamId}/${saved.runtime}`
          : '';
      checks.push({ name: 'CLI token', status: 'ok', detail: `valid${who}` });
    } catch (error) {
      checks.push({
        name: 'CLI token',
        status: 'fail',
        detail: message(error),
        fix: 'save a new one: `ctxbus token create --team TEAM --runtime cli --save`',
      });
    }
  } else {
    checks.push({
      name: 'CLI token',
      status: 'info',
      detail: 'none: write, read and search need --token or one saved',
      fix: '`ctxbus token create --team TEAM --runtime cli --save`',
    });
  }
  return { checks, url };
}

function nodeVersionOf(path: string): string | null {
  const result = spawnSync(path, ['--version'], { encoding: 'utf8', timeout: 10_000 });
  return result.status === 0 ? result.stdout.trim() : null;
}

/** What is wrong with the Node and hook script an installed runtime's hooks run, if anything. */
function scriptProblems(nodePath: string | null, hookScript: string | null): string[] {
  const problems: string[] = [];
  if (!nodePath || !existsSync(nodePath)) {
    problems.push(`its hooks run ${nodePath ?? 'an unknown node'}, which is gone`);
  } else {
    const version = nodeVersionOf(nodePath);
    if (!version || !nodeAtLeast(version)) {
      problems.push(`its hooks run Node ${version ?? '?'} (${nodePath}); they need 22.13+`);
    }
  }
  if (!hookScript || !existsSync(hookScript)) {
    problems.push(
      `the hook script${hookScript ? ` ${hookScript}` : ''} is gone (ctxbus moved or was rebuilt elsewhere)`,
    );
  }
  return problems;
}

async function checkClaudeCode(projectDir: string): Promise<Check[]> {
  const { inspectClaudeCode } = await import('@ctxbus/adapter-claude-code');
  const checks: Check[] = [];
  const scopes = [
    { label: `Claude Code (project ${projectDir})`, target: { kind: 'project', dir: projectDir } },
    { label: 'Claude Code (every project)', target: { kind: 'user' } },
  ] as const;
  let installedAnywhere = false;
  for (const { label, target } of scopes) {
    let found: Awaited<ReturnType<typeof inspectClaudeCode>>;
    try {
      found = inspectClaudeCode(target);
    } catch (error) {
      checks.push({ name: label, status: 'fail', detail: message(error) });
      continue;
    }
    if (found.settings === null) continue;
    installedAnywhere = true;
    const problems = scriptProblems(found.nodePath, found.hookScript);
    if (!found.mcpServer) problems.push('the ctxbus MCP server is not registered');
    let who = '';
    if (!found.url || !found.token) {
      problems.push('no hub URL or token in its settings');
    } else {
      try {
        who = `, token acts as ${await whoIs(found.url, found.token)} on ${found.url}`;
      } catch (error) {
        problems.push(message(error));
      }
    }
    const scopeFlag = target.kind === 'user' ? '--user' : `--project ${projectDir}`;
    checks.push(
      problems.length === 0
        ? { name: label, status: 'ok', detail: `hooks and MCP server installed${who}` }
        : {
            name: label,
            status: 'fail',
            detail: problems.join('; '),
            fix: `run \`ctxbus install claude-code ${scopeFlag}\` again`,
          },
    );
  }
  if (!installedAnywhere) {
    checks.push({
      name: 'Claude Code',
      status: 'info',
      detail: NOT_CONNECTED,
      fix: '`ctxbus connect`, or `ctxbus install claude-code --project . --team TEAM` (or --user)',
    });
  }
  return checks;
}

/** A runtime ctxbus finds no install of: whether the runtime itself is here, doctor does not say. */
const NOT_CONNECTED = 'ctxbus is not connected to it here';

/** Codex's install, read through Codex's own tools (`codex` on PATH). */
async function checkCodex(): Promise<Check> {
  const adapter = await import('@ctxbus/adapter-codex');
  const name = 'Codex';
  const hooksFile = join(adapter.codexHomeDir(), 'hooks.json');
  if (!existsSync(hooksFile) || !readFileSync(hooksFile, 'utf8').includes(adapter.HOOK_SCRIPT)) {
    return {
      name,
      status: 'info',
      detail: NOT_CONNECTED,
      fix: '`ctxbus connect`, or `ctxbus install codex --team TEAM`',
    };
  }
  let found: Awaited<ReturnType<typeof adapter.inspectCodex>>;
  try {
    found = await adapter.inspectCodex({ run: adapter.codexRunner() });
  } catch (error) {
    return { name, status: 'fail', detail: message(error) };
  }
  const problems = scriptProblems(found.nodePath, found.hookScript);
  if (found.trusted < found.hooks) {
    problems.push(
      `${found.hooks - found.trusted} of its ${found.hooks} hooks are not trusted: Codex skips them`,
    );
  }
  if (!found.mcpServer) problems.push('the ctxbus MCP server is not registered');
  const token = found.url ? hubCredentials(found.url).runtimes?.codex?.token : undefined;
  let who = '';
  if (!found.url || !token) {
    problems.push(`no token saved for Codex on ${found.url ?? 'its hub'}`);
  } else {
    try {
      who = `, token acts as ${await whoIs(found.url, token)} on ${found.url}`;
    } catch (error) {
      problems.push(message(error));
    }
  }
  return problems.length === 0
    ? { name, status: 'ok', detail: `${found.hooks} hooks, trusted, and the MCP server${who}` }
    : {
        name,
        status: 'fail',
        detail: problems.join('; '),
        fix: 'run `ctxbus install codex` again (or trust the hooks in Codex with /hooks)',
      };
}

/**
 * OpenClaw's install, read from its config file where OpenClaw's documented rules put it,
 * without starting OpenClaw (seconds and 100-200 MB a start): the plugin's hub and whether its
 * token works there. A profile or a config elsewhere is OpenClaw's to say.
 */
async function checkOpenClaw(): Promise<Check> {
  const adapter = await import('@ctxbus/adapter-openclaw');
  const name = 'OpenClaw';
  const path = adapter.knownConfigPath(process.env);
  let hub: ReturnType<typeof adapter.installedHub>;
  try {
    hub = path === null ? null : adapter.installedHub(path);
  } catch (error) {
    return { name, status: 'fail', detail: message(error) };
  }
  if (hub === null) {
    return {
      name,
      status: 'info',
      detail: `${NOT_CONNECTED}${path === null ? ' (no OpenClaw config at its default place; with a profile, ask `openclaw plugins inspect ctxbus`)' : ` (${path})`}`,
      fix: '`ctxbus install openclaw` (or `ctxbus connect`)',
    };
  }
  try {
    return {
      name,
      status: 'ok',
      detail: `the ctxbus plugin in ${path}, token acts as ${await whoIs(hub.url, hub.token)} on ${hub.url}`,
    };
  } catch (error) {
    return {
      name,
      status: 'fail',
      detail: `the ctxbus plugin in ${path}: ${message(error)}`,
      fix: '`ctxbus connect --only openclaw` (or `ctxbus install openclaw --team TEAM`), then restart the gateway (openclaw gateway restart)',
    };
  }
}

/** Whether `ctxbus service install` put the hub in the background, and systemd runs it. */
function checkService(): Check {
  const name = 'background service';
  const path = serviceUnitPath();
  if (!existsSync(path)) {
    return {
      name,
      status: 'info',
      detail: 'not installed',
      fix: '`ctxbus service install` keeps the hub running (systemd user unit)',
    };
  }
  const manager = userManager();
  if (!manager.reachable) {
    return {
      name,
      status: 'warn',
      detail: `${path} is installed, but systemd is not running for this user`,
      fix: 'start the hub another way (`ctxbus serve` in tmux or with nohup)',
    };
  }
  const unit = unitProperties(SERVICE_UNIT_NAME);
  const state = `${unit.UnitFileState || 'not loaded'}, ${unit.ActiveState ?? '?'} (${unit.SubState ?? '?'})`;
  return unit.ActiveState === 'active'
    ? { name, status: 'ok', detail: state }
    : {
        name,
        status: 'warn',
        detail: state,
        fix: '`ctxbus service status`, `ctxbus service logs`',
      };
}

/** Runs every check; the CLI prints them. */
export async function runDoctor(options: { url?: string; project: string }): Promise<Check[]> {
  const checks: Check[] = [
    nodeAtLeast(process.version)
      ? { name: 'Node.js', status: 'ok', detail: `${process.version} (${process.execPath})` }
      : {
          name: 'Node.js',
          status: 'fail',
          detail: `${process.version}; ctxbus needs ${MIN_NODE.join('.')} or later`,
          fix: 'install Node 24, or run ctxbus through ./dev link, which pins the Node ./dev fetched',
        },
  ];
  checks.push(...(await checkHub(options.url)).checks);
  checks.push(checkService());
  checks.push(...(await checkClaudeCode(options.project)));
  checks.push(await checkOpenClaw());
  checks.push(await checkCodex());
  return checks;
}
