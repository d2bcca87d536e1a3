// A child's environment is built from an allow-list, never inherited: the base names below,
// plus names the worker's policy allows explicitly. Some names are denied whatever the lists
// say (loader and interpreter hooks, PATH overrides, proxies, TLS trust, credentials), even
// when a request asks for them.

/** Names always passed from the worker's environment when set. */
export const BASE_ENV_NAMES: readonly string[] = [
  'HOME',
  'LANG',
  'LANGUAGE',
  'TERM',
  'TZ',
  'USER',
  'LOGNAME',
  'CI',
  'NO_COLOR',
  'FORCE_COLOR',
  'COLORTERM',
];

/** The PATH children get unless the worker chooses another one. */
export const DEFAULT_CHILD_PATH = '/usr/local/bin:/usr/bin:/bin';

/** Exact names (compared upper-case) never passed to a child. */
const DENIED_NAMES = new Set([
  'PATH',
  'NODE_OPTIONS',
  'NODE_PATH',
  'NODE_EXTRA_CA_CERTS',
  'NODE_TLS_REJECT_UNAUTHORIZED',
  'NODE_REPL_EXTERNAL_MODULE',
  'PYTHONPATH',
  'PYTHONHOME',
  'PYTHONSTARTUP',
  'PYTHONINSPECT',
  'PYTHONUSERBASE',
  'PERL5LIB',
  'PERL5OPT',
  'PERLLIB',
  'RUBYOPT',
  'RUBYLIB',
  'BASH_ENV',
  'ENV',
  'SHELLOPTS',
  'BASHOPTS',
  'PS4',
  'PROMPT_COMMAND',
  'IFS',
  'CDPATH',
  'GLOBIGNORE',
  'JAVA_TOOL_OPTIONS',
  '_JAVA_OPTIONS',
  'JDK_JAVA_OPTIONS',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'ALL_PROXY',
  'NO_PROXY',
  'FTP_PROXY',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'CURL_CA_BUNDLE',
  'REQUESTS_CA_BUNDLE',
  'GITHUB_TOKEN',
  'GH_TOKEN',
  'SSH_AUTH_SOCK',
  'KUBECONFIG',
  'DOCKER_HOST',
]);

/** Patterns (upper-case names) never passed to a child, with why. */
const DENIED_PATTERNS: readonly [RegExp, string][] = [
  [/^LD_/, 'dynamic loader'],
  [/^DYLD_/, 'dynamic loader'],
  [/^BASH_FUNC_/, 'shell function import'],
  [/_PROXY$/, 'proxy'],
  [/(^|_)CA_(BUNDLE|CERTS?|FILE|PATH)$/, 'TLS trust'],
  [/^GIT_/, 'git hooks and commands'],
  [/^NPM_CONFIG_/, 'npm configuration (script-shell, registry)'],
  [/^PNPM_/, 'pnpm configuration'],
  [/_TOKEN$/, 'credential'],
  [/_KEY$/, 'credential'],
  [/_SECRET$/, 'credential'],
  [/_PASSWORD$/, 'credential'],
  [/_PASSWD$/, 'credential'],
  [/_CREDENTIALS?$/, 'credential'],
  [/^AWS_/, 'credential'],
  [/^AZURE_/, 'credential'],
  [/^GOOGLE_APPLICATION_CREDENTIALS$/, 'credential'],
  [/^ANTHROPIC_/, 'credential'],
  [/^OPENAI_/, 'credential'],
  [/^CTXBUS_/, 'ctxbus configuration and credentials'],
];

/** Why a variable may never reach a child (null: it may, if allowed). Case-insensitive. */
export function deniedEnvReason(name: string): string | null {
  const upper = name.toUpperCase();
  if (upper === 'PATH') return 'PATH is chosen by the worker';
  if (DENIED_NAMES.has(upper)) return 'never passed to commands';
  for (const [pattern, why] of DENIED_PATTERNS) if (pattern.test(upper)) return why;
  return null;
}

function allowedName(name: string, extra: ReadonlySet<string>): boolean {
  const upper = name.toUpperCase();
  return BASE_ENV_NAMES.includes(upper) || upper.startsWith('LC_') || extra.has(upper);
}

export interface ScrubEnvOptions {
  /** Where values come from (the worker's environment). */
  source: Readonly<Record<string, string | undefined>>;
  /** Names allowed beyond the base list (the policy's); denied names stay denied. */
  extraNames?: readonly string[];
  /** Values a request asks for: allowed names only, never denied ones, never PATH. */
  requested?: Readonly<Record<string, string>>;
  /** The PATH every child gets (the worker's choice; default DEFAULT_CHILD_PATH). */
  path?: string;
}

export interface ScrubbedEnv {
  env: Record<string, string>;
  /** Names the request asked for that were not passed, with why. */
  dropped: { name: string; reason: string }[];
}

/** Builds a child's environment from the allow-lists (see the module comment). */
export function scrubEnv(options: ScrubEnvOptions): ScrubbedEnv {
  const extra = new Set((options.extraNames ?? []).map((name) => name.toUpperCase()));
  const env: Record<string, string> = {};
  const dropped: { name: string; reason: string }[] = [];
  for (const [name, value] of Object.entries(options.source)) {
    if (value === undefined || !allowedName(name, extra)) continue;
    if (deniedEnvReason(name) !== null) continue;
    env[name] = value;
  }
  for (const [name, value] of Object.entries(options.requested ?? {})) {
    const denied = deniedEnvReason(name);
    if (denied !== null) dropped.push({ name, reason: denied });
    else if (!allowedName(name, extra)) dropped.push({ name, reason: 'not in the allow-list' });
    else if (name.includes('=') || name.includes('\0') || value.includes('\0'))
      dropped.push({ name, reason: 'malformed' });
    else env[name] = value;
  }
  env.PATH = options.path ?? DEFAULT_CHILD_PATH;
  return { env, dropped };
}
