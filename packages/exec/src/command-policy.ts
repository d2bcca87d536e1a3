import { basename, isAbsolute, relative, resolve } from 'node:path';
import { CtxbusError } from '@ctxbus/core';

// Which commands a remote-execution worker may run: an allow-list matched on argv, never on a
// shell string. Entries come from capabilities.yaml's `remote_execution.allow`.

/** The token that, last in an entry, means "these words, then any further arguments". */
export const REST_TOKEN = '...';

/** Characters an allow-list entry may not contain: they would suggest a shell runs it. */
const SHELL_CHARACTERS = /[;|&$`<>]/;

export interface AllowEntry {
  /** The entry as written in capabilities.yaml. */
  source: string;
  /** Its words, without a trailing `...`. */
  argv: string[];
  /** Whether it ended in `...` (any further arguments allowed). */
  rest: boolean;
}

/**
 * Splits an allow-list entry into argv without a shell: words are separated by whitespace;
 * '...' and "..." quote a word (spaces kept, the quotes removed, nothing inside interpreted:
 * no escapes, no expansion, no globbing, no operators). An entry with any of ; | & $ ` < >
 * (quoted or not), an unterminated quote, or no words is refused with `validation_failed`.
 * A bare `...` as the last word means "then any further arguments"; anywhere else it is an
 * error (a quoted '...' is the literal word).
 */
export function parseAllowEntry(source: string): AllowEntry {
  const bad = SHELL_CHARACTERS.exec(source);
  if (bad) {
    throw new CtxbusError(
      'validation_failed',
      `remote_execution.allow: "${source}" contains '${bad[0]}': entries are argv, no shell operators, variables or redirections`,
    );
  }
  const words: { text: string; quoted: boolean }[] = [];
  let current: string | null = null;
  let quoted = false;
  let quote: string | null = null;
  for (const character of source) {
    if (quote) {
      if (character === quote) quote = null;
      else current = (current ?? '') + character;
    } else if (character === "'" || character === '"') {
      quote = character;
      quoted = true;
      current = current ?? '';
    } else if (/\s/.test(character)) {
      if (current !== null) words.push({ text: current, quoted });
      current = null;
      quoted = false;
    } else {
      current = (current ?? '') + character;
    }
  }
  if (quote) {
    throw new CtxbusError(
      'validation_failed',
      `remote_execution.allow: "${source}" has an unterminated ${quote} quote`,
    );
  }
  if (current !== null) words.push({ text: current, quoted });
  const restAt = words.findIndex((word) => word.text === REST_TOKEN && !word.quoted);
  if (restAt !== -1 && restAt !== words.length - 1) {
    throw new CtxbusError(
      'validation_failed',
      `remote_execution.allow: "${source}": ${REST_TOKEN} may only be the last word`,
    );
  }
  const rest = restAt !== -1;
  const argv = words.slice(0, rest ? -1 : undefined).map((word) => word.text);
  if (argv.length === 0 || argv[0] === '') {
    throw new CtxbusError(
      'validation_failed',
      `remote_execution.allow: "${source}" names no command`,
    );
  }
  return { source, argv, rest };
}

/** Parses every entry (the first bad one throws, naming it). */
export function parseAllowList(entries: readonly string[]): AllowEntry[] {
  return entries.map(parseAllowEntry);
}

export type CommandRefusalCode = 'not_allowed' | 'inline_eval' | 'workdir_escape' | 'invalid_argv';

export type CommandDecision =
  | { allowed: true; entry: AllowEntry }
  | { allowed: false; code: CommandRefusalCode; reason: string };

function equalsExactly(entry: AllowEntry, argv: readonly string[]): boolean {
  return (
    !entry.rest &&
    entry.argv.length === argv.length &&
    entry.argv.every((word, index) => word === argv[index])
  );
}

function matches(entry: AllowEntry, argv: readonly string[]): boolean {
  if (!entry.rest) return equalsExactly(entry, argv);
  return (
    argv.length >= entry.argv.length && entry.argv.every((word, index) => word === argv[index])
  );
}

// ---------------------------------------------------------------------------------------------
// Inline evaluation: programs that run code (or another command) given on their command line.
// The whole argv is scanned (not only the interpreter's own options): a script's argument that
// looks like an eval flag refuses too. Deny by default; an exact allow-list entry overrides.

interface InterpreterRule {
  /** Short option letters that evaluate their argument (clusters such as -pe count). */
  short?: string;
  /** Short option letters that take a value: the rest of the cluster is that value. */
  shortWithValue?: string;
  /** Long options (with or without =value) that evaluate code. */
  long?: string[];
  /** Subcommands (argv[1]) that evaluate code. */
  subcommands?: string[];
  /** Other checks on a single word (returns the offending word's description). */
  word?: (word: string) => string | null;
  /** The program always runs code or a command from its arguments. */
  always?: string;
}

const SHELL: InterpreterRule = { short: 'c', shortWithValue: 'oO' };

/** The inline-eval table (README.md lists it). Keys are program basenames. */
export const INLINE_EVAL_RULES: Readonly<Record<string, InterpreterRule>> = {
  node: {
    short: 'ep',
    shortWithValue: 'rC',
    long: ['--eval', '--print', '--input-type'],
    word: (word) => (/(^|=)data:/i.test(word) ? 'a data: URL module' : null),
  },
  nodejs: { short: 'ep', shortWithValue: 'rC', long: ['--eval', '--print', '--input-type'] },
  python: { short: 'c', shortWithValue: 'WXmQ' },
  bash: SHELL,
  sh: SHELL,
  zsh: SHELL,
  dash: SHELL,
  ksh: SHELL,
  mksh: SHELL,
  ash: SHELL,
  fish: { short: 'c', long: ['--command', '--init-command'] },
  csh: { short: 'c' },
  tcsh: { short: 'c' },
  perl: { short: 'eE', shortWithValue: 'MmIdD' },
  ruby: { short: 'e', shortWithValue: 'rIECx' },
  php: { short: 'rBRE', shortWithValue: 'cdfzt' },
  lua: { short: 'e', shortWithValue: 'l' },
  luajit: { short: 'e', shortWithValue: 'lbj' },
  rscript: { short: 'e' },
  r: { short: 'e' },
  osascript: { short: 'e' },
  deno: { subcommands: ['eval'], long: ['--eval', '--eval-file'] },
  bun: { short: 'ep', long: ['--eval', '--print'] },
  pwsh: {
    word: (word) =>
      /^[-/](c|co|com|comm|comma|comman|command|commandwithargs|cwa|e|ec|en|enc|enco|encod|encode|encoded|encodedc|encodedco|encodedcom|encodedcomm|encodedcomma|encodedcomman|encodedcommand)(:.*)?$/i.test(
        word,
      )
        ? 'a -Command / -EncodedCommand parameter'
        : null,
  },
  powershell: { word: (word) => INLINE_EVAL_RULES.pwsh?.word?.(word) ?? null },
  make: { shortWithValue: 'CfIjlWo', short: 'E', long: ['--eval'] },
  npx: { short: 'c', long: ['--call'] },
  find: {
    word: (word) =>
      ['-exec', '-execdir', '-ok', '-okdir'].includes(word) ? `${word} (runs a command)` : null,
  },
  awk: { always: 'its program is a command-line argument' },
  gawk: { always: 'its program is a command-line argument' },
  mawk: { always: 'its program is a command-line argument' },
  nawk: { always: 'its program is a command-line argument' },
  sed: { always: 'its script is a command-line argument (GNU sed can run commands: e)' },
  env: { always: 'it runs another command (with an environment of its choosing)' },
  xargs: { always: 'it runs another command' },
  sudo: { always: 'it runs another command' },
  doas: { always: 'it runs another command' },
  su: { always: 'it runs another command' },
  nice: { always: 'it runs another command' },
  nohup: { always: 'it runs another command' },
  timeout: { always: 'it runs another command' },
  setsid: { always: 'it runs another command' },
  stdbuf: { always: 'it runs another command' },
  chroot: { always: 'it runs another command' },
  unshare: { always: 'it runs another command' },
  nsenter: { always: 'it runs another command' },
  strace: { always: 'it runs another command' },
  ltrace: { always: 'it runs another command' },
  time: { always: 'it runs another command' },
  watch: { always: 'it runs another command' },
  flock: { always: 'it runs another command' },
  ionice: { always: 'it runs another command' },
  taskset: { always: 'it runs another command' },
  busybox: { always: 'it runs any applet, shells included' },
  script: { always: 'it runs another command' },
};

/** Program name for the table: the basename, lower-case, versions folded (python3.12 -> python). */
export function programName(program: string): string {
  const name = basename(program).toLowerCase();
  if (/^python[0-9.]*$/.test(name)) return 'python';
  if (/^(perl|ruby|php|lua)[0-9.]*$/.test(name)) return name.replace(/[0-9.]+$/, '');
  if (/^node[0-9.]*$/.test(name)) return 'node';
  return name;
}

function shortClusterEvaluates(word: string, rule: InterpreterRule): boolean {
  if (!/^-[^-]/.test(word) || !rule.short) return false;
  for (const letter of word.slice(1)) {
    if (rule.short.includes(letter)) return true;
    if (rule.shortWithValue?.includes(letter)) return false;
    if (!/[A-Za-z0-9]/.test(letter)) return false;
  }
  return false;
}

function longEvaluates(word: string, rule: InterpreterRule): boolean {
  return (rule.long ?? []).some((flag) => word === flag || word.startsWith(`${flag}=`));
}

/** Package-manager forms that run a shell string or an arbitrary package's command line. */
function packageManagerEval(name: string, argv: readonly string[]): string | null {
  const args = argv.slice(1);
  const sub = args.find((word) => !word.startsWith('-'));
  const shellFlag = args.some(
    (word) =>
      word === '-c' ||
      word === '--call' ||
      word.startsWith('--call=') ||
      word === '--shell-mode' ||
      word.startsWith('--script-shell'),
  );
  if (name === 'npm' && (sub === 'exec' || sub === 'x') && shellFlag) return 'npm exec -c/--call';
  if (name === 'npm' && args.some((word) => word.startsWith('--script-shell')))
    return 'npm --script-shell';
  if (name === 'pnpm' && (sub === 'dlx' || sub === 'exec') && shellFlag)
    return `pnpm ${sub} -c/--shell-mode`;
  if (name === 'yarn' && sub === 'exec') return 'yarn exec';
  return null;
}

/** git options that run a command named on the command line. */
function gitEval(argv: readonly string[]): string | null {
  const args = argv.slice(1);
  for (const [index, word] of args.entries()) {
    if (word === '-c' || word === '--config-env' || word.startsWith('--config-env='))
      return `git ${word} (configuration can name commands: aliases, pager, ssh)`;
    if (/^--(exec-path|upload-pack|receive-pack|exec)(=|$)/.test(word))
      return `git ${word.split('=')[0]}`;
    if (word === 'bisect' && args[index + 1] === 'run') return 'git bisect run';
    if (word === 'submodule' && args.includes('foreach')) return 'git submodule foreach';
    if (word === 'rebase' && args.some((arg) => arg === '-x' || /^-[a-z]*x/.test(arg)))
      return 'git rebase -x';
    if (word === 'filter-branch') return 'git filter-branch';
  }
  return null;
}

/**
 * Why argv evaluates code or runs another command given on its command line (null: it does
 * not, by the table). See README.md for the table.
 */
export function inlineEvalReason(argv: readonly string[]): string | null {
  const program = argv[0];
  if (program === undefined) return null;
  const name = programName(program);
  if (name === 'npm' || name === 'pnpm' || name === 'yarn') {
    const found = packageManagerEval(name, argv);
    return found ? `${found} runs a shell string` : null;
  }
  if (name === 'git') return gitEval(argv);
  const rule = Object.hasOwn(INLINE_EVAL_RULES, name) ? INLINE_EVAL_RULES[name] : undefined;
  if (!rule) return null;
  if (rule.always) return `${name}: ${rule.always}`;
  if (rule.subcommands && argv[1] !== undefined && rule.subcommands.includes(argv[1])) {
    return `${name} ${argv[1]} evaluates code`;
  }
  for (const word of argv.slice(1)) {
    if (shortClusterEvaluates(word, rule) || longEvaluates(word, rule)) {
      return `${name} ${word} evaluates code given on the command line`;
    }
    const special = rule.word?.(word);
    if (special) return `${name}: ${special}`;
  }
  return null;
}

export interface CommandCheckOptions {
  /** The working directory (as requested); a relative program path must stay inside it. */
  cwd?: string;
}

/**
 * Decides whether argv may run under the allow-list. Order: argv is well formed; a relative
 * program path with a slash stays inside the working directory; an entry equal to argv allows
 * it outright (even inline evaluation: it was written down exactly); otherwise inline
 * evaluation is refused (`inline_eval`), then an entry ending in `...` whose words begin argv
 * allows it; anything else is `not_allowed`.
 */
export function checkCommand(
  argv: readonly string[],
  allow: readonly AllowEntry[],
  options: CommandCheckOptions = {},
): CommandDecision {
  const program = argv[0];
  if (program === undefined || program === '') {
    return { allowed: false, code: 'invalid_argv', reason: 'the command is empty' };
  }
  if (argv.some((word) => word.includes('\0'))) {
    return { allowed: false, code: 'invalid_argv', reason: 'an argument contains a NUL byte' };
  }
  if (!isAbsolute(program) && program.includes('/')) {
    const base = options.cwd ?? '.';
    const inside = relative(resolve(base), resolve(base, program));
    if (inside === '' || inside.startsWith('..') || isAbsolute(inside)) {
      return {
        allowed: false,
        code: 'workdir_escape',
        reason: `the program ${program} is outside the working directory`,
      };
    }
  }
  const exact = allow.find((entry) => equalsExactly(entry, argv));
  if (exact) return { allowed: true, entry: exact };
  const evaluates = inlineEvalReason(argv);
  if (evaluates) {
    return {
      allowed: false,
      code: 'inline_eval',
      reason: `${evaluates}; refused unless an allow-list entry names this exact command`,
    };
  }
  const prefix = allow.find((entry) => matches(entry, argv));
  if (prefix) return { allowed: true, entry: prefix };
  return {
    allowed: false,
    code: 'not_allowed',
    reason: `${JSON.stringify(argv.join(' ').slice(0, 200))} is not in remote_execution.allow`,
  };
}
