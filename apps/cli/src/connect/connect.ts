import { createHash } from 'node:crypto';
import { createClient } from '@ctxbus/client';
import { CtxbusError, DEFAULT_HUB_URL, serveCommand } from '@ctxbus/core/light';
import { installToken, tokenWorks } from '../commands/install.js';
import {
  defaultTeam,
  forgetRuntimeToken,
  savedRuntimeToken,
  saveRuntimeToken,
} from '../credentials.js';
import { findAdminToken, findHubUrl } from '../hub-target.js';
import { npxCacheDir } from '../runtime-files.js';
import type { Connection, ConnectState } from './connect-state.js';
import {
  currentContents,
  fileHash,
  pruneBackups,
  putBack,
  readConnectState,
  restoreFile,
  snapshotFile,
  untouchedSince,
  writeConnectState,
} from './connect-state.js';
import type { ConnectContext, RuntimeConnector, Wiring } from './connectors.js';
import { CONNECTORS } from './connectors.js';

// `ctxbus connect` and `ctxbus disconnect`: find the runtimes on this machine, show what will
// change, wire each with a token of its own through its adapter's installer, and record what
// was added (connect-state.ts) so disconnect takes out exactly that.

export interface ConnectOptions {
  url?: string;
  team?: string;
  adminToken?: string;
  only?: string;
  dryRun?: boolean;
  /** false (`--no-service`): never start a hub as a systemd user service. */
  service?: boolean;
}

export interface Output {
  /** What the person reads: the plan and the result (stdout). */
  line: (text: string) => void;
  /** Slow steps as they start (stderr). */
  progress: (text: string) => void;
}

/** --url, $CTXBUS_URL, the saved hub, else the default local one. */
function connectUrl(flag: string | undefined): string {
  return findHubUrl(flag) ?? DEFAULT_HUB_URL;
}

async function hubAnswers(url: string): Promise<boolean> {
  try {
    await createClient({ url, token: 'none', retries: 0, timeoutMs: 5_000 }).health();
    return true;
  } catch {
    return false;
  }
}

const noHub = (url: string, why = '') =>
  new CtxbusError(
    'unavailable',
    `no hub answers at ${url}: start one with \`${serveCommand(url)}\` (or in the background: \`ctxbus service install\`), then run this again${why}`,
  );

/** The port of a plain-HTTP loopback URL (a hub this machine would serve), else null. */
function loopbackPort(url: string): number | null {
  const parsed = new URL(url);
  if (parsed.protocol !== 'http:') return null;
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(parsed.hostname)) return null;
  return Number(parsed.port || 80);
}

/**
 * The hub connect wires against: the one that answers, else (a loopback URL, a systemd user
 * manager, no --no-service) one started as a user service, as `ctxbus service install` does.
 * A dry run only says it would start one.
 */
async function ensureHub(
  url: string,
  options: ConnectOptions,
  out: Output,
): Promise<'running' | 'would start'> {
  if (await hubAnswers(url)) return 'running';
  const port = loopbackPort(url);
  if (options.service === false || port === null) throw noHub(url);
  const { userManager } = await import('../systemd-user.js');
  const manager = userManager();
  if (!manager.reachable) {
    throw noHub(url, ` (no systemd user manager to start one as a service: ${manager.reason})`);
  }
  const command = `ctxbus service install --port ${port}`;
  if (options.dryRun) {
    out.line(`no hub answers at ${url}: would start one as a systemd user service (${command})`);
    return 'would start';
  }
  out.line(`no hub answers at ${url}: starting one as a systemd user service (${command})`);
  const { install } = await import('../commands/service.js');
  await install(['--port', String(port)], {});
  out.progress(`waiting for the hub at ${url} to answer`);
  await waitForHub(url, 60_000);
  return 'running';
}

/** Polls /health until the hub answers, or fails after `ms` saying where to look. */
async function waitForHub(url: string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  for (let delay = 100; Date.now() < deadline; delay = Math.min(delay * 2, 2_000)) {
    if (await hubAnswers(url)) return;
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
  throw new CtxbusError(
    'unavailable',
    `the service started, but no hub answered at ${url} within ${ms / 1000} s: see ctxbus service status and ctxbus service logs`,
  );
}

/** The connectors --only names (all when it is absent); an unknown name is bad input. */
function selected(only: string | undefined): readonly RuntimeConnector[] {
  if (only === undefined) return CONNECTORS;
  const names = only
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  const known = CONNECTORS.map((connector) => connector.runtime);
  const unknown = names.filter((name) => !known.includes(name));
  if (unknown.length > 0 || names.length === 0) {
    throw new CtxbusError(
      'validation_failed',
      `--only takes runtimes among ${known.join(', ')} (got "${only}")`,
    );
  }
  return CONNECTORS.filter((connector) => names.includes(connector.runtime));
}

/** --team, else the team of the tokens saved for this hub, else the user's login name. */
type TokenSource = { kind: 'saved' | 'configured'; token: string } | { kind: 'mint' };

/** The token to wire with: the saved one, else the one already configured, if the hub takes it. */
async function chooseToken(
  url: string,
  runtime: string,
  wiring: Wiring,
): Promise<{ source: TokenSource; connected: boolean }> {
  const saved = savedRuntimeToken(url, runtime)?.token;
  for (const [kind, token] of [
    ['saved', saved],
    ['configured', wiring.token],
  ] as const) {
    if (token && (await tokenWorks(url, token))) {
      return { source: { kind, token }, connected: wiring.wiredWith(token) };
    }
  }
  return { source: { kind: 'mint' }, connected: false };
}

interface Planned {
  connector: RuntimeConnector;
  setup: unknown;
  wiring: Wiring;
  source: TokenSource;
}

const tokenPhrase = (source: TokenSource, team: string, runtime: string) =>
  source.kind === 'mint'
    ? `a new token ${team}/${runtime}`
    : source.kind === 'saved'
      ? 'its saved token'
      : 'the token it already has';

/** Wires one runtime, recording before the first write what to undo. */
async function wire(
  plan: Planned,
  context: ConnectContext,
  options: ConnectOptions,
  team: string,
  state: ConnectState,
): Promise<string[]> {
  const { connector, source } = plan;
  const previous = state.connections[connector.runtime];
  const kept = previous?.hub === context.url ? previous : undefined;
  const files = plan.wiring.files.map(
    (path) => kept?.files.find((file) => file.path === path) ?? snapshotFile(path),
  );
  let token: string;
  let tokenId = kept?.tokenId ?? null;
  let teamId = kept?.teamId ?? team;
  if (source.kind === 'mint') {
    const minted = await installToken(context.url, connector.runtime, {
      team,
      ...(options.adminToken && { adminToken: options.adminToken }),
    }).catch((error: unknown) => {
      if (CtxbusError.isInstance(error) && error.code === 'unauthorized') {
        throw new CtxbusError(
          'unauthorized',
          `the hub refuses the admin token that mints ${connector.runtime}'s (--admin-token, $CTXBUS_ADMIN_TOKEN, or the one ctxbus serve saved): ${error.message}`,
        );
      }
      throw error;
    });
    token = minted.token;
    tokenId = minted.tokenId;
    teamId = team;
  } else token = source.token;
  const saves = savedRuntimeToken(context.url, connector.runtime)?.token !== token;
  if (saves) saveRuntimeToken(context.url, { token, teamId, runtime: connector.runtime });
  const savedTokenSha256 = saves ? sha256(token) : kept?.savedTokenSha256;
  const connection: Connection = {
    hub: context.url,
    connectedAt: new Date().toISOString(),
    teamId,
    tokenId,
    savedToken: saves || (kept?.savedToken ?? false),
    ...(savedTokenSha256 !== undefined && { savedTokenSha256 }),
    files,
  };
  state.connections[connector.runtime] = connection;
  writeConnectState(state);
  const contents = currentContents(plan.wiring.files);
  let changes: string[];
  try {
    changes = await connector.apply(plan.setup, context, plan.wiring, token);
  } catch (error) {
    // One file written, the next refused (a read-only ~/.claude.json): hooks without their
    // MCP server. Every file goes back to what it held before this attempt.
    const stuck = putBack(contents);
    const message = CtxbusError.isInstance(error) ? error.message : (error as Error).message;
    throw new CtxbusError(
      CtxbusError.isInstance(error) ? error.code : 'internal',
      `${message}; ${stuck.length === 0 ? 'its files are as they were' : `could not put back ${stuck.join(', ')} (ctxbus disconnect undoes it)`}`,
      { retryable: false },
    );
  }
  for (const file of files) file.after = fileHash(file.path);
  writeConnectState(state);
  return changes;
}

/** `ctxbus connect`: find, show, wire. */
export async function connect(options: ConnectOptions, out: Output): Promise<void> {
  const cache = npxCacheDir();
  if (cache !== null) {
    throw new CtxbusError(
      'validation_failed',
      `ctxbus runs from npx's cache (${cache}), which npm empties at will: runtimes wired to its files would break later. Install it first (npm install -g ctxbus), then run ctxbus connect`,
    );
  }
  const connectors = selected(options.only);
  const url = connectUrl(options.url);
  const hub = await ensureHub(url, options, out);
  const context: ConnectContext = { url, progress: out.progress };
  const team = options.team ?? defaultTeam(url);
  out.line(`hub ${url}, team ${team}`);
  const problems: CtxbusError[] = [];
  const plans: Planned[] = [];
  let found = 0;
  for (const connector of connectors) {
    const detected = connector.detect();
    if (detected.status === 'missing') {
      out.line(`${connector.label}: not found (to install it: ${detected.hint})`);
      if (options.only) {
        problems.push(new CtxbusError('not_found', `${connector.label} is not installed here`));
      }
      continue;
    }
    if (detected.status === 'unusable') {
      out.line(`${connector.label}: cannot run here: ${detected.reason}`);
      problems.push(
        new CtxbusError('internal', `${connector.label}: ${detected.reason}`, { retryable: false }),
      );
      continue;
    }
    found++;
    const where = `${connector.label} ${detected.version} (${detected.command}${detected.note ? `; ${detected.note}` : ''})`;
    let wiring: Awaited<ReturnType<typeof connector.inspect>>;
    try {
      wiring = await connector.inspect(detected.setup, context);
    } catch (error) {
      // A runtime whose own files it cannot read (a broken config) is left; the others go on.
      const failure = CtxbusError.isInstance(error)
        ? error
        : new CtxbusError('internal', (error as Error).message, { retryable: false });
      out.line(`${where}: cannot connect: ${failure.message}`);
      problems.push(failure);
      continue;
    }
    const { source, connected } = await chooseToken(url, connector.runtime, wiring);
    if (connected) {
      out.line(`${where}: already connected`);
      continue;
    }
    out.line(
      `${where}: will add ${wiring.what} with ${tokenPhrase(source, team, connector.runtime)}, in ${wiring.files.join(', ')}`,
    );
    plans.push({ connector, setup: detected.setup, wiring, source });
  }
  // A hub the service will start saves its admin token then (ctxbus serve does).
  if (
    hub === 'running' &&
    plans.some((plan) => plan.source.kind === 'mint') &&
    !findAdminToken(url, options.adminToken)
  ) {
    throw new CtxbusError(
      'validation_failed',
      `no admin token for ${url} to mint the runtimes' tokens: pass --admin-token or set CTXBUS_ADMIN_TOKEN (ctxbus serve saves a new hub's)`,
    );
  }
  if (options.dryRun) {
    out.line(
      plans.length ? 'dry run: nothing changed (run without --dry-run to do it)' : 'dry run',
    );
  } else {
    const state = readConnectState();
    for (const plan of plans) {
      // One runtime failing (an OpenClaw that cannot run its own commands) leaves the others
      // to be wired; what it did is recorded, so disconnect undoes it and revokes its token.
      try {
        const changes = await wire(plan, context, options, team, state);
        out.line(
          `connected ${plan.connector.label}${changes.length ? `: ${changes.join('; ')}` : ''}`,
        );
      } catch (error) {
        const failure = CtxbusError.isInstance(error)
          ? error
          : new CtxbusError('internal', (error as Error).message, { retryable: false });
        out.line(`${plan.connector.label}: not connected: ${failure.message}`);
        problems.push(failure);
      }
    }
    if (plans.length > 0) out.line('undo with: ctxbus disconnect');
  }
  finish(problems, found);
}

/** The exit: the first problem's code and line; no runtime found at all is not found (4). */
function finish(problems: CtxbusError[], found: number): void {
  const [first] = problems;
  if (first) throw first;
  if (found === 0) {
    throw new CtxbusError(
      'not_found',
      `no runtime to connect found here (${CONNECTORS.map((connector) => connector.label).join(', ')}): install one, then run ctxbus connect again`,
    );
  }
}

export interface DisconnectOptions {
  only?: string;
  adminToken?: string;
}

/**
 * Revokes the token connect minted, if the hub answers: a line saying what happened, and
 * whether the token is gone (a token that was not revoked stays recorded for the next try).
 */
async function revoke(
  connection: Connection,
  runtime: string,
  flag?: string,
): Promise<{ line: string; revoked: boolean }> {
  if (!connection.tokenId) return { line: '', revoked: true };
  const admin = findAdminToken(connection.hub, flag);
  try {
    if (!admin) throw new Error('no admin token');
    await createClient({
      url: connection.hub,
      token: admin,
      retries: 0,
      timeoutMs: 5_000,
    }).revokeToken(connection.tokenId);
    return { line: `token ${connection.teamId}/${runtime} revoked`, revoked: true };
  } catch (error) {
    return {
      line: `token ${connection.teamId}/${runtime} not revoked (${(error as Error).message}): kept on record for the next ctxbus disconnect (or: ctxbus token revoke ${connection.tokenId})`,
      revoked: false,
    };
  }
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** Whether the token saved for `runtime` is still the one connect saved (else the user's). */
function stillConnects(connection: Connection, runtime: string): boolean {
  if (connection.savedTokenSha256 === undefined) return true;
  const saved = savedRuntimeToken(connection.hub, runtime)?.token;
  return saved !== undefined && sha256(saved) === connection.savedTokenSha256;
}

/** `ctxbus disconnect`: removes exactly what connect added. */
export async function disconnect(options: DisconnectOptions, out: Output): Promise<void> {
  const connectors = selected(options.only);
  const state = readConnectState();
  const recorded = connectors.filter((connector) => state.connections[connector.runtime]);
  if (recorded.length === 0) {
    out.line('nothing to disconnect: ctxbus connect has wired no runtime here');
    return;
  }
  const unrevoked: string[] = [];
  for (const connector of recorded) {
    const connection = state.connections[connector.runtime] as Connection;
    const context: ConnectContext = { url: connection.hub, progress: out.progress };
    const untouched = connection.files.filter(untouchedSince);
    const found = connector.detect();
    const changes = found.status === 'ready' ? await connector.remove(found.setup, context) : [];
    if (found.status !== 'ready') out.line(`${connector.label} not found now: its files only`);
    for (const file of connection.files) {
      if (untouched.includes(file)) restoreFile(file);
      else out.line(`${file.path} changed since connect: only ctxbus's entries were taken out`);
    }
    const revoked = await revoke(connection, connector.runtime, options.adminToken);
    if (connection.savedToken && stillConnects(connection, connector.runtime)) {
      forgetRuntimeToken(connection.hub, connector.runtime);
    }
    // Everything else is undone; a token the hub did not revoke stays on record, alone.
    if (revoked.revoked) delete state.connections[connector.runtime];
    else {
      state.connections[connector.runtime] = { ...connection, files: [], savedToken: false };
      unrevoked.push(`${connection.teamId}/${connector.runtime}`);
    }
    writeConnectState(state);
    pruneBackups(state);
    const paths = (before: boolean) =>
      untouched.filter((file) => (file.before !== null) === before).map((file) => file.path);
    const done = [
      ...(paths(true).length ? [`put back ${paths(true).join(', ')}`] : []),
      ...(paths(false).length ? [`removed ${paths(false).join(', ')} (connect made them)`] : []),
      ...(untouched.length === 0 ? changes : []),
      ...(revoked.line ? [revoked.line] : []),
    ];
    out.line(`disconnected ${connector.label}${done.length ? `: ${done.join('; ')}` : ''}`);
  }
  if (unrevoked.length > 0) {
    throw new CtxbusError(
      'unavailable',
      `the token${unrevoked.length === 1 ? '' : 's'} ${unrevoked.join(', ')} still work${unrevoked.length === 1 ? 's' : ''}: run ctxbus disconnect again once the hub answers`,
    );
  }
}
