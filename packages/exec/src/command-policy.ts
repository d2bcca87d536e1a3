import { basename, isAbsolute, relative, resolve } from 'node:path';
import { CtxbusError } from '@ctxbus/core/light';

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
  | {
      allowed: true;
      entry: AllowEntry;
      /**
       * Set when only an entry that lets a program run code from its free arguments allowed
       * it (`codeRunningEntry`): it then runs sandboxed, or approved, never bare.
       */
      runsCode?: string;
    }
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
  /**
   * Options that load a file or module the command's author did not name (-r, --import,
   * --env-file...): refused like evaluation. Short letters here also count in clusters.
   */
  loads?: { short?: string; long?: string[] };
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

/** Node's options that load code or settings from a file the command line names. */
const NODE_LOADS = {
  short: 'r',
  long: [
    '--require',
    '--import',
    '--loader',
    '--experimental-loader',
    '--env-file',
    '--env-file-if-exists',
    '--experimental-config-file',
    '--experimental-default-config-file',
    '--snapshot-blob',
  ],
};

/** The inline-eval table (README.md lists it). Keys are program basenames. */
export const INLINE_EVAL_RULES: Readonly<Record<string, InterpreterRule>> = {
  node: {
    short: 'ep',
    shortWithValue: 'rC',
    long: ['--eval', '--print', '--input-type'],
    loads: NODE_LOADS,
    word: (word) => (/(^|=)data:/i.test(word) ? 'a data: URL module' : null),
  },
  nodejs: {
    short: 'ep',
    shortWithValue: 'rC',
    long: ['--eval', '--print', '--input-type'],
    loads: NODE_LOADS,
  },
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
  // -M/-m load a module, and `-M5;<code>` runs code: evaluation.
  perl: { short: 'eEMm', shortWithValue: 'IdD' },
  ruby: { short: 'e', shortWithValue: 'rIECx', loads: { short: 'r', long: ['--require'] } },
  // -d sets an ini value (auto_prepend_file runs a file), -c names the ini file.
  php: { short: 'rBRE', shortWithValue: 'cdfzt', loads: { short: 'dc' } },
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
      ['-exec', '-execdir', '-ok', '-okdir'].includes(word)
        ? `${word} (runs a command)`
        : ['-fprint', '-fprint0', '-fprintf', '-fls', '-delete'].includes(word)
          ? `${word} (writes or deletes files it names, anywhere)`
          : null,
  },
  rg: {
    word: (word) =>
      /^--(pre|hostname-bin)(=|$)/.test(word) ? `${word.split('=', 1)[0]} (runs a command)` : null,
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

/** The load option `word` is, by the rule (null: none). */
function loadOption(word: string, rule: InterpreterRule): string | null {
  const loads = rule.loads;
  if (!loads) return null;
  const long = (loads.long ?? []).find((flag) => word === flag || word.startsWith(`${flag}=`));
  if (long) return long;
  if (!/^-[^-]/.test(word) || !loads.short) return null;
  for (const letter of word.slice(1)) {
    if (loads.short.includes(letter)) return `-${letter}`;
    if (rule.shortWithValue?.includes(letter) || !/[A-Za-z0-9]/.test(letter)) return null;
  }
  return null;
}

/** Package-manager forms that run a shell string or an arbitrary package's command line. */
function packageManagerEval(name: string, argv: readonly string[]): string | null {
  const args = argv.slice(1);
  const sub = args.find((word) => !word.startsWith('-'));
  // npm takes abbreviated long options too (nopt): `--script-sh` is --script-shell.
  const shellFlag = args.some(
    (word) => word === '-c' || longOption(word, ['call', 'shell-mode', 'script-shell']) !== null,
  );
  if (name === 'npm' && (sub === 'exec' || sub === 'x') && shellFlag) return 'npm exec -c/--call';
  if (name === 'npm' && args.some((word) => longOption(word, ['script-shell']) !== null))
    return 'npm --script-shell';
  if (name === 'pnpm' && (sub === 'dlx' || sub === 'exec') && shellFlag)
    return `pnpm ${sub} -c/--shell-mode`;
  if (name === 'yarn' && sub === 'exec') return 'yarn exec';
  // Options the package manager hands to every node it starts (--require, --import...).
  if (args.some((word) => longOption(word, ['node-options']) !== null))
    return `${name} --node-options`;
  return null;
}

/** git subcommands whose -u names the remote's upload-pack command (clone -u <cmd>). */
const GIT_UPLOAD_PACK_SHORT = new Set(['clone', 'fetch', 'pull', 'ls-remote']);

/**
 * The long option of `names` that `word` is (`--name`, `--name=value`) or abbreviates: getopt_long
 * and git take any unambiguous prefix (`--checkpoint-act` is `--checkpoint-action`), so every
 * prefix counts here, ambiguity being the program's to refuse. Null: none of them.
 */
function longOption(word: string, names: readonly string[]): string | null {
  if (!word.startsWith('--') || word === '--') return null;
  const given = word.slice(2).split('=', 1)[0] as string;
  if (given === '') return null;
  return names.find((name) => name.startsWith(given)) ?? null;
}

/**
 * A short option cluster (`-iO...`, `-qu`, `-3O...`: git takes a context count first) holding
 * one of `letters`, before any value.
 */
function shortCluster(word: string, letters: string): boolean {
  return new RegExp(`^-[A-Za-z0-9]*[${letters}]`).test(word) && !word.startsWith('--');
}

/** git long options that run a command they name. */
const GIT_RUNS = [
  'exec-path',
  'upload-pack',
  'receive-pack',
  'exec',
  'extcmd',
  'open-files-in-pager',
];

/**
 * git options that run a command named on the command line, or make git read another
 * repository's configuration (which can name commands: fsmonitor, hooks, pager, filters) or
 * write a file the command line names, wherever it is.
 */
function gitEval(argv: readonly string[]): string | null {
  const args = argv.slice(1);
  const sub = gitSubcommand(args);
  for (const [index, word] of args.entries()) {
    if (word === '-c' || word === '--config-env' || word.startsWith('--config-env='))
      return `git ${word} (configuration can name commands: aliases, pager, ssh)`;
    const runs = longOption(word, GIT_RUNS);
    if (runs) return `git --${runs} (runs a command it names)`;
    const before = sub === undefined || index < args.indexOf(sub);
    const elsewhere = before ? longOption(word, ['git-dir', 'work-tree']) : null;
    if (elsewhere || (before && word.startsWith('-C'))) {
      return `git ${elsewhere ? `--${elsewhere}` : '-C'} (another directory's repository, whose configuration can name commands)`;
    }
    if (longOption(word, ['output'])) return 'git --output (writes a file it names, anywhere)';
    if (sub === 'apply' && longOption(word, ['unsafe-paths', 'directory']))
      return 'git apply --unsafe-paths/--directory (writes outside the working directory)';
    if (sub === 'grep' && shortCluster(word, 'O'))
      return 'git grep -O (opens files in a pager it names)';
    if (sub !== undefined && GIT_UPLOAD_PACK_SHORT.has(sub) && shortCluster(word, 'u'))
      return `git ${sub} -u (the remote's upload-pack command)`;
    if (sub === 'difftool' && shortCluster(word, 'x')) return 'git difftool -x (runs a command)';
    if ((sub === 'format-patch' || sub === 'archive') && shortCluster(word, 'o'))
      return `git ${sub} -o (writes where it names, anywhere)`;
    if (word === 'bisect' && args[index + 1] === 'run') return 'git bisect run';
    if (word === 'submodule' && args.includes('foreach')) return 'git submodule foreach';
    if (word === 'rebase' && args.some((arg) => arg === '-x' || /^-[a-z]*x/.test(arg)))
      return 'git rebase -x';
    if (word === 'filter-branch') return 'git filter-branch';
  }
  return null;
}

/** The subcommand: the first word that is not a global option or a global option's value. */
function gitSubcommand(args: readonly string[]): string | undefined {
  for (let index = 0; index < args.length; index++) {
    const word = args[index] as string;
    if (!word.startsWith('-')) return word;
    if (['-C', '-c', '--git-dir', '--work-tree', '--namespace', '--config-env'].includes(word))
      index++;
  }
  return undefined;
}

/**
 * Programs whose options (long ones in any abbreviation, short ones in any cluster) run a
 * command, load code or config from elsewhere, or write where they name.
 */
interface OptionRule {
  long: readonly string[];
  /** Short option letters, found inside clusters too. */
  short: string;
  /** What such an option does, for the refusal. */
  does: string;
  /** The first argument is a cluster even without its dash (tar's `tar cIf ...`). */
  dashlessFirst?: boolean;
}

const TAR_RULE: OptionRule = {
  long: [
    'checkpoint-action',
    'to-command',
    'use-compress-program',
    'info-script',
    'new-volume-script',
    'rsh-command',
    'rmt-command',
  ],
  short: 'IF',
  does: 'runs a command it names',
  dashlessFirst: true,
};

const PYTEST_RULE: OptionRule = {
  // -p loads a plugin; -c, -o and the config options name config; --rootdir and --confcutdir
  // pick another directory's conftest; the rest write or delete where they name.
  long: [
    'junitxml',
    'junit-xml',
    'basetemp',
    'debug',
    'log-file',
    'resultlog',
    'rootdir',
    'confcutdir',
    'config-file',
    'override-ini',
    'doctest-glob',
    'pyargs',
  ],
  short: 'pco',
  does: 'loads code or config from, or writes to, where it names',
};

const OPTION_RULES: Readonly<Record<string, OptionRule>> = {
  tar: TAR_RULE,
  gtar: TAR_RULE,
  bsdtar: TAR_RULE,
  // --compress-program: each temporary chunk is piped through it; -o/--output writes.
  sort: {
    long: ['compress-program', 'output'],
    short: 'o',
    does: 'runs a command or writes a file it names',
  },
  pytest: PYTEST_RULE,
  'py.test': PYTEST_RULE,
};

/** The option of `args` that the rule refuses, with why; null: none. */
function optionEval(name: string, args: readonly string[], rule: OptionRule): string | null {
  for (const [index, word] of args.entries()) {
    const long = longOption(word, rule.long);
    if (long) return `${name} --${long} ${rule.does}`;
    const cluster =
      rule.dashlessFirst && index === 0 && /^[A-Za-z]+$/.test(word) ? `-${word}` : word;
    if (shortCluster(cluster, rule.short)) return `${name} ${word} ${rule.does}`;
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
  const options = Object.hasOwn(OPTION_RULES, name) ? OPTION_RULES[name] : undefined;
  if (options) return optionEval(name, argv.slice(1), options);
  if (name === 'python' && argv[1] === '-m' && argv[2] === 'pytest') {
    const found = optionEval('pytest', argv.slice(3), PYTEST_RULE);
    if (found) return found;
  }
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
    const loads = loadOption(word, rule);
    if (loads) return `${name} ${loads} loads a file or module the command line names`;
    const special = rule.word?.(word);
    if (special) return `${name}: ${special}`;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Entries that are permission to run code. A flag list cannot win against an interpreter or a
// build tool that takes free arguments (`python3 -m timeit "<code>"`, `make 'X:=$(shell ...)'`):
// such an entry lets its caller run code, whatever the refusals above catch. Commands it alone
// allows run only sandboxed, or approved (prepareExecution); `ctxbus capabilities check` warns.

/** Build tools whose free arguments can define and run commands (variables, targets, -f). */
const CODE_RUNNING_TOOLS = new Set(['make', 'gmake', 'bmake', 'cmake', 'ninja']);

/**
 * Why an allow entry lets its caller run code given in the free arguments (null: it does not,
 * by these rules): an entry ending in `...` for an interpreter or shell (the table above)
 * whose fixed words name no script or module (`node ...`, `python3 -X dev ...`), or for a
 * build tool (`make ...`, `make test ...`). `node scripts/check.js ...` passes: its free
 * arguments go to the script.
 */
export function codeRunningEntry(entry: AllowEntry): string | null {
  if (!entry.rest) return null;
  const program = entry.argv[0];
  if (program === undefined) return null;
  const name = programName(program);
  if (CODE_RUNNING_TOOLS.has(name)) {
    return `"${entry.source}" lets ${name} take free arguments, which can define and run commands`;
  }
  const rule = Object.hasOwn(INLINE_EVAL_RULES, name) ? INLINE_EVAL_RULES[name] : undefined;
  // An interpreter stops reading options at its script: the free arguments are the script's.
  // A package runner's first word is a tool (`npx vitest`), not a script: its free arguments
  // are that tool's options, as any program's.
  if (rule && !rule.always && !RUNS_TOOLS.has(name) && namesScript(entry.argv.slice(1), rule))
    return null;
  if (rule && !rule.always) {
    return `"${entry.source}" lets the interpreter ${name} take free arguments: code on the command line`;
  }
  // Any other program's free arguments are its options, every one of them: a program that
  // reads a file or a config the command line names (tar -xf, git apply, npm --prefix or
  // --userconfig, cargo --config, go test -exec, pytest @file) can be fed the caller's own
  // bytes (/proc/self/cmdline) and write anywhere or run anything. No list of options keeps
  // up (three outside looks each found more).
  return `"${entry.source}" lets ${name} take free arguments: every option it has (reading config or files the command line names, writing anywhere, running commands)`;
}

/** Programs whose first word names a package, a tool or a subcommand, never a script file. */
const RUNS_TOOLS = new Set(['npx', 'bun', 'deno']);

/**
 * Whether the fixed words name the script the interpreter runs: a word that is not an option.
 * Not a module of -m (`-m pytest`: the free arguments are the module's options). Values of
 * options that take one are skipped (`-W error`).
 */
function namesScript(words: readonly string[], rule: InterpreterRule): boolean {
  for (let index = 0; index < words.length; index++) {
    const word = words[index] as string;
    if (word === '--') return index + 1 < words.length;
    if (!word.startsWith('-') || word === '-') return word !== '-';
    // A module's free arguments are its own options (pytest's @file, -p, --rootdir...), and
    // so are a program's that -S finds on the PATH (`ruby -S rake`, `perl -S prove`).
    if (word === '-m' || word === '-S') return false;
    const last = word.at(-1) ?? '';
    if (/^-[^-]/.test(word) && word.length === 2 && rule.shortWithValue?.includes(last)) index++;
  }
  return false;
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
  const prefixes = allow.filter((entry) => matches(entry, argv));
  // An entry that is no permission to run code wins over one that is.
  const safe = prefixes.find((entry) => codeRunningEntry(entry) === null);
  if (safe) return { allowed: true, entry: safe };
  const prefix = prefixes[0];
  if (prefix) return { allowed: true, entry: prefix, runsCode: codeRunningEntry(prefix) ?? '' };
  return {
    allowed: false,
    code: 'not_allowed',
    reason: `${JSON.stringify(argv.join(' ').slice(0, 200))} is not in remote_execution.allow`,
  };
}
