import { homedir } from 'node:os';
import { join } from 'node:path';
import { CtxbusError } from '@ctxbus/core/light';

// The systemd user unit that runs the hub in the background (`ctxbus service install`), as
// text: written, read back, and its command line quoted and split by systemd's rules
// (systemd.service(5) "Command lines", systemd.unit(5) "Specifiers"). No systemd needed here.

export const SERVICE_UNIT_NAME = 'ctxbus.service';

/** $XDG_CONFIG_HOME/systemd/user/ctxbus.service, else ~/.config/systemd/user/ctxbus.service. */
export function serviceUnitPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(
    env.XDG_CONFIG_HOME || join(homedir(), '.config'),
    'systemd',
    'user',
    SERVICE_UNIT_NAME,
  );
}

/** Characters a word may hold unquoted (besides `%` and `$`, escaped by doubling). */
const PLAIN_WORD = /^[A-Za-z0-9_@+=:,./-]+$/;

const C_ESCAPES: Record<string, string> = {
  '\\': '\\\\',
  '"': '\\"',
  '\n': '\\n',
  '\t': '\\t',
  '\r': '\\r',
};

/**
 * One word of a unit setting, quoted so systemd reads it back as exactly `value`: double
 * quotes around anything but plain characters, C escapes inside, `%` doubled (specifiers),
 * and in a command line `$` doubled (environment variable expansion).
 */
export function quoteSystemdWord(value: string, context: 'command' | 'environment'): string {
  const specifiers = value.replace(/%/g, '%%');
  const escaped = context === 'command' ? specifiers.replace(/\$/g, '$$$$') : specifiers;
  if (PLAIN_WORD.test(value)) return escaped;
  return `"${escaped.replace(/[\\"\n\t\r]/g, (char) => C_ESCAPES[char] ?? char)}"`;
}

const C_UNESCAPES: Record<string, string> = {
  a: '\u0007',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
  s: ' ',
  '\\': '\\',
  '"': '"',
  "'": "'",
};

/** Reads one C escape at `text[at]` (after the backslash): the character and its length. */
function unescapeAt(text: string, at: number): [string, number] {
  const char = text[at];
  if (char === undefined) throw new CtxbusError('validation_failed', 'a line ends in a backslash');
  const simple = C_UNESCAPES[char];
  if (simple !== undefined) return [simple, 1];
  if (char === 'x' && /^[0-9a-fA-F]{2}$/.test(text.slice(at + 1, at + 3))) {
    return [String.fromCharCode(Number.parseInt(text.slice(at + 1, at + 3), 16)), 3];
  }
  if (/^[0-7]{3}$/.test(text.slice(at, at + 3))) {
    return [String.fromCharCode(Number.parseInt(text.slice(at, at + 3), 8)), 3];
  }
  throw new CtxbusError('validation_failed', `unsupported escape \\${char}`);
}

/**
 * Splits a command line (an ExecStart= value) into the argv systemd runs: `%%` becomes `%`
 * first (other specifiers are refused: ctxbus never writes them), then words split on
 * whitespace with double or single quotes and C escapes, then `$$` becomes `$` in each word
 * (a `$VAR` is refused likewise).
 */
export function splitSystemdCommandLine(line: string): string[] {
  return splitSystemdWords(line, 'command');
}

function splitSystemdWords(line: string, context: 'command' | 'environment'): string[] {
  const text = line.replace(/%(.?)/g, (_, next: string) => {
    if (next === '%') return '%';
    throw new CtxbusError('validation_failed', `unsupported specifier %${next}`);
  });
  const words: string[] = [];
  let at = 0;
  while (at < text.length) {
    while (at < text.length && /\s/.test(text[at] ?? '')) at++;
    if (at >= text.length) break;
    let word = '';
    const quote = text[at] === '"' || text[at] === "'" ? text[at] : null;
    if (quote) {
      at++;
      while (text[at] !== quote) {
        if (at >= text.length) throw new CtxbusError('validation_failed', 'unterminated quote');
        if (text[at] === '\\') {
          const [char, length] = unescapeAt(text, at + 1);
          word += char;
          at += 1 + length;
        } else word += text[at++];
      }
      at++;
      if (at < text.length && !/\s/.test(text[at] ?? '')) {
        throw new CtxbusError('validation_failed', 'a closing quote must be followed by a space');
      }
    } else {
      while (at < text.length && !/\s/.test(text[at] ?? '')) {
        if (text[at] === '\\') {
          const [char, length] = unescapeAt(text, at + 1);
          word += char;
          at += 1 + length;
        } else word += text[at++];
      }
    }
    words.push(
      context === 'environment'
        ? word
        : word.replace(/\$(.?)/g, (_, next: string) => {
            if (next === '$') return '$';
            throw new CtxbusError('validation_failed', `unsupported variable $${next}`);
          }),
    );
  }
  return words;
}

export interface ServiceUnit {
  /** The hub's command line: the absolute Node binary, the CLI's entry script, `serve` options. */
  execStart: string[];
  /** Environment= entries, in order. */
  environment: Array<[name: string, value: string]>;
}

/** Refuses a command systemd would not run: a relative path or one with special characters. */
function checkExecutable(execStart: string[]): void {
  const first = execStart[0];
  if (!first?.startsWith('/')) {
    throw new CtxbusError('validation_failed', 'the command must start with an absolute path');
  }
  // systemd refuses such executables ("Executable name contains special characters").
  if ([...first].some((char) => char < ' ' || char === '\u007f' || `"'\\`.includes(char))) {
    throw new CtxbusError(
      'validation_failed',
      `systemd cannot run a program whose path holds quotes, backslashes or control characters: ${first}`,
    );
  }
}

function execLines(unit: ServiceUnit): string[] {
  return [
    `ExecStart=${unit.execStart.map((word) => quoteSystemdWord(word, 'command')).join(' ')}`,
    ...unit.environment.map(
      ([name, value]) => `Environment=${quoteSystemdWord(`${name}=${value}`, 'environment')}`,
    ),
  ];
}

/** The unit file's text. */
export function renderServiceUnit(unit: ServiceUnit): string {
  checkExecutable(unit.execStart);
  const lines = [
    '# Written by `ctxbus service install` (run it again to change this unit;',
    '# `ctxbus service uninstall` removes it).',
    '[Unit]',
    'Description=ctxbus hub: shared context for AI agent runtimes',
    '',
    '[Service]',
    'Type=simple',
    ...execLines(unit),
    'Restart=on-failure',
    'RestartSec=5',
    '# Bad options (exit 2) stay bad: restarting would not help.',
    'RestartPreventExitStatus=2',
    '',
    '[Install]',
    'WantedBy=default.target',
    '',
  ];
  return lines.join('\n');
}

/**
 * A oneshot service and the timer that starts it every `everyMinutes` (for `ctxbus handoff
 * monitor --once`): `<name>.service` and `<name>.timer`, to put in ~/.config/systemd/user/.
 */
export function renderTimerUnits(
  unit: ServiceUnit & { name: string; description: string; everyMinutes: number },
): { service: string; timer: string } {
  checkExecutable(unit.execStart);
  const service = [
    '[Unit]',
    `Description=${unit.description}`,
    '',
    '[Service]',
    'Type=oneshot',
    ...execLines(unit),
    '',
  ].join('\n');
  const timer = [
    '[Unit]',
    `Description=${unit.description} (every ${unit.everyMinutes} min)`,
    '',
    '[Timer]',
    `OnBootSec=${unit.everyMinutes}min`,
    `OnUnitActiveSec=${unit.everyMinutes}min`,
    `Unit=${unit.name}.service`,
    '',
    '[Install]',
    'WantedBy=timers.target',
    '',
  ].join('\n');
  return { service, timer };
}

/** The argv in a unit file's ExecStart=, or null when the text has none. */
export function unitExecStart(text: string): string[] | null {
  const line = text.split('\n').find((candidate) => candidate.startsWith('ExecStart='));
  return line === undefined ? null : splitSystemdCommandLine(line.slice('ExecStart='.length));
}

/** The variables a unit file's Environment= lines set, in order. */
export function unitEnvironment(text: string): Array<[string, string]> {
  const entries: Array<[string, string]> = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('Environment=')) continue;
    for (const word of splitSystemdWords(line.slice('Environment='.length), 'environment')) {
      const equals = word.indexOf('=');
      if (equals > 0) entries.push([word.slice(0, equals), word.slice(equals + 1)]);
    }
  }
  return entries;
}

/** The hub URL the unit's command line serves on; null when its port is 0 (any) or unknown. */
export function unitHubUrl(argv: string[]): string | null {
  const value = (names: string[]): string | undefined => {
    let found: string | undefined;
    argv.forEach((word, index) => {
      for (const name of names) {
        if (word === name) found = argv[index + 1];
        else if (name.startsWith('--') && word.startsWith(`${name}=`)) {
          found = word.slice(name.length + 1);
        }
      }
    });
    return found;
  };
  const port = Number(value(['--port', '-p']));
  if (!Number.isInteger(port) || port <= 0 || port > 65_535) return null;
  const host = value(['--host']) ?? '127.0.0.1';
  const reachable = host === '0.0.0.0' || host === '::' || host === '' ? '127.0.0.1' : host;
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`;
}
