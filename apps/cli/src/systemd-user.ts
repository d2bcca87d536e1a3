import { spawnSync } from 'node:child_process';

// The one place ctxbus talks to systemd: `systemctl --user`, `journalctl --user` and
// `loginctl`, run from PATH. Everything else about the service (the unit's text, where it
// goes, what to print) is plain code around it.

export type SystemdTool = 'systemctl' | 'journalctl' | 'loginctl';

export interface SystemdResult {
  /** The exit code; null when the tool could not be run at all (see `error`). */
  status: number | null;
  stdout: string;
  stderr: string;
  /** Why the tool did not run (not installed, say). */
  error?: string;
}

/**
 * Runs a systemd tool to completion. `interactive`: its output goes straight to the terminal
 * (`journalctl --follow`), and stdout/stderr come back empty.
 */
export function runSystemd(
  tool: SystemdTool,
  args: string[],
  options: { interactive?: boolean } = {},
): SystemdResult {
  const result = spawnSync(tool, args, {
    encoding: 'utf8',
    stdio: options.interactive ? 'inherit' : ['ignore', 'pipe', 'pipe'],
    ...(!options.interactive && { timeout: 60_000 }),
  });
  return {
    status: result.status,
    stdout: result.stdout ?? '',
    stderr: result.stderr ?? '',
    ...(result.error && {
      error:
        (result.error as NodeJS.ErrnoException).code === 'ENOENT'
          ? `${tool} is not installed`
          : result.error.message,
    }),
  };
}

/** A systemd user manager answers for this user; else why not, in a few words. */
export function userManager(): { reachable: true } | { reachable: false; reason: string } {
  const result = runSystemd('systemctl', ['--user', 'show-environment']);
  if (result.status === 0) return { reachable: true };
  const said = `${result.stderr}`
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  return {
    reachable: false,
    reason: result.error ?? (said.join('; ') || `systemctl --user exited with ${result.status}`),
  };
}

/** What systemd knows of a unit: LoadState, ActiveState, SubState, UnitFileState... */
export function unitProperties(unit: string): Record<string, string> {
  const result = runSystemd('systemctl', [
    '--user',
    'show',
    unit,
    '--property=LoadState,ActiveState,SubState,UnitFileState,MainPID,ActiveEnterTimestamp',
  ]);
  const properties: Record<string, string> = {};
  for (const line of result.stdout.split('\n')) {
    const equals = line.indexOf('=');
    if (equals > 0) properties[line.slice(0, equals)] = line.slice(equals + 1);
  }
  return properties;
}
