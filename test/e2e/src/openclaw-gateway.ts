import { type ChildProcess, spawn } from 'node:child_process';
import { createConnection } from 'node:net';
import { freePort, waitUntil } from '@ctxbus/test-kit';
import type { OpenClawHome } from './openclaw-harness.js';
import { OPENCLAW_BIN } from './openclaw-harness.js';

// The real OpenClaw gateway (`openclaw gateway run`) in a test's OpenClaw home: the long-lived
// process where plugin services run and where `openclaw agent` (without --local) sends turns.
// Loopback only, token auth; its output is kept for the test to wait on and to print.

export interface OpenClawGateway {
  port: number;
  /** Everything the gateway printed so far. */
  output(): string;
  /** Waits until the gateway printed a line matching `pattern`. */
  waitForOutput(pattern: RegExp, what: string, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.end();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Points the home's config at a local gateway on a free port with `token`. */
export async function configureGateway(openclaw: OpenClawHome, token: string): Promise<number> {
  const port = await freePort();
  openclaw.writeConfig({
    ...openclaw.readConfig(),
    gateway: { mode: 'local', port, bind: 'loopback', auth: { mode: 'token', token } },
  });
  return port;
}

/** How long the gateway may take to listen: a hang guard (it loads for 20-90 s on a busy machine). */
const START_MS = 300_000;

/** Why a gateway start failed: it exited before it listened (with what it printed), or else. */
class GatewayExited extends Error {
  constructor(readonly output: string) {
    super(`the gateway exited; it printed:\n${output.slice(-4_000)}`);
  }
}

/** Starts the gateway with no more than this many tries when it exits by itself while starting. */
const START_TRIES = 3;

/**
 * Starts the gateway configured by configureGateway and waits until it accepts connections.
 * Under heavy load the real gateway sometimes exits by itself while it starts (seen at load 14,
 * after its own SQLite transactions took 1-2 s): that start is tried again, up to START_TRIES,
 * each failed try printed. Not when a line of its output names ctxbus with an error (the plugin
 * runs in the gateway: a failure of ours must fail the test), nor once it listened.
 */
export async function startGateway(openclaw: OpenClawHome, port: number): Promise<OpenClawGateway> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startGatewayOnce(openclaw, port);
    } catch (error) {
      const ours =
        error instanceof GatewayExited &&
        error.output
          .split('\n')
          .some(
            (line) => /ctxbus/i.test(line) && /error|fail|exception|cannot|could not/i.test(line),
          );
      if (!(error instanceof GatewayExited) || ours || attempt >= START_TRIES) throw error;
      process.stderr.write(
        `openclaw gateway exited while starting (try ${attempt} of ${START_TRIES}); starting it again. It printed:\n${error.output.slice(-2_000)}\n`,
      );
    }
  }
}

async function startGatewayOnce(openclaw: OpenClawHome, port: number): Promise<OpenClawGateway> {
  let output = '';
  const child: ChildProcess = spawn(
    OPENCLAW_BIN,
    ['gateway', 'run', '--port', String(port), '--bind', 'loopback', '--verbose'],
    { cwd: openclaw.home, env: openclaw.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  const gateway: OpenClawGateway = {
    port,
    output: () => output,
    waitForOutput: (pattern, what, timeoutMs = START_MS) =>
      waitUntil(
        () => {
          if (exited) throw new Error(`the gateway exited; it printed:\n${output.slice(-4_000)}`);
          return pattern.test(output);
        },
        what,
        { timeoutMs, intervalMs: 200 },
      ),
    async stop() {
      if (exited || !child.pid) return;
      const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      process.kill(-child.pid, 'SIGTERM');
      const timer = setTimeout(() => child.pid && process.kill(-child.pid, 'SIGKILL'), 20_000);
      await gone;
      clearTimeout(timer);
    },
  };
  try {
    await waitUntil(
      async () => {
        if (exited) throw new GatewayExited(output);
        return portOpen(port);
      },
      'the gateway to listen',
      { timeoutMs: START_MS, intervalMs: 250 },
    );
  } catch (error) {
    await gateway.stop();
    throw error;
  }
  return gateway;
}
