import { CtxbusError } from '../shared/errors.js';
import type { Redaction } from './context-item.js';

interface SecretPattern {
  kind: string;
  pattern: RegExp;
  /** Index of the capture group holding the secret; the rest of the match is kept. 0 = all. */
  group: number;
}

// Ordered: specific formats first, so a key is named for what it is, then generic shapes.
// Each runs in time linear in the text: a pattern that can start at every word boundary of a
// long run (`a.a.a.…`, `a-a-a-…`, `eyJ-eyJ-…`) reads at most a bounded stretch from each start
// before it fails, or has no such run to read (an unbounded one made one 100,000-character item
// cost the hub tens of seconds).
const PATTERNS: readonly SecretPattern[] = [
  {
    kind: 'private-key',
    pattern:
      /-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)/g,
    group: 0,
  },
  { kind: 'anthropic-api-key', pattern: /\bsk-ant-[A-Za-z0-9_-]{20,}/g, group: 0 },
  {
    kind: 'openai-api-key',
    pattern: /\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}/g,
    group: 0,
  },
  { kind: 'stripe-key', pattern: /\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}/g, group: 0 },
  {
    kind: 'github-token',
    pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})/g,
    group: 0,
  },
  { kind: 'gitlab-token', pattern: /\bglpat-[A-Za-z0-9_-]{20,}/g, group: 0 },
  { kind: 'slack-token', pattern: /\bxox[abprse]-[A-Za-z0-9-]{10,}/g, group: 0 },
  { kind: 'aws-access-key-id', pattern: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g, group: 0 },
  { kind: 'google-api-key', pattern: /\bAIza[0-9A-Za-z_-]{35}/g, group: 0 },
  { kind: 'telegram-bot-token', pattern: /\b\d{8,10}:AA[A-Za-z0-9_-]{33}\b/g, group: 0 },
  { kind: 'ctxbus-token', pattern: /\bcbx_[A-Za-z0-9_-]{20,}/g, group: 0 },
  {
    kind: 'jwt',
    // Starts where a run of token characters starts (not after a `-` either: `eyJ-eyJ-…` would
    // be a start every four characters, each reading the whole run).
    pattern: /(?<![\w-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g,
    group: 0,
  },
  { kind: 'bearer-token', pattern: /\b(Bearer\s+)([A-Za-z0-9._~+/-]{16,}=*)/gi, group: 2 },
  {
    kind: 'url-password',
    // A URL scheme is short (postgresql, mongodb+srv, git+ssh).
    pattern: /\b([a-z][a-z0-9+.-]{0,31}:\/\/[^\s:/@]+:)([^\s@/]{3,})(@)/gi,
    group: 2,
  },
  {
    kind: 'secret-assignment',
    // A quoted value, spaces and all (`Passphrase: "correct horse battery"`), before the
    // unquoted forms below, which stop at the first space.
    pattern:
      /((?:passw(?:or)?d|pass[_-]?phrase|(?<![A-Za-z])pass(?![A-Za-z])|(?<![A-Za-z])pwd|secret(?:[_-]?key)?|token|api[_-]?key)"?\s*[:=]\s*")([^"\n]{4,200})(")/gi,
    group: 2,
  },
  {
    kind: 'secret-assignment',
    // A command-line option and its value (`--password hunter2`, `sshpass -p hunter2`), and an
    // XML element (`<password>hunter2</password>`).
    pattern:
      /((?:--(?:passw(?:or)?d|pass[_-]?phrase|token|api[_-]?key|secret)|\bsshpass\s+-p)[ \t]+)([^\s"']{4,})/gi,
    group: 2,
  },
  {
    kind: 'secret-assignment',
    pattern:
      /(<(?:passw(?:or)?d|pass[_-]?phrase|secret(?:[_-]?key)?|token|api[_-]?key)>)([^<\n]{1,200})(<\/)/gi,
    group: 2,
  },
  {
    kind: 'secret-assignment',
    // A client's user and password (`curl -u admin:hunter2`, `--user=admin:hunter2`); not a
    // user and group of numbers (`docker run -u 1000:1000`).
    pattern: /((?<![\w-])(?:-u|--user)[ \t]*=?[ \t]*["']?[^\s:"'@]+:)(?!\d+\b)([^\s"']{3,})/g,
    group: 2,
  },
  {
    kind: 'secret-assignment',
    // The MySQL clients' password glued to its option (`mysql -phunter2`).
    pattern:
      /(\b(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)\b[^\n]*?[ \t]-p)([^\s"']{3,})/g,
    group: 2,
  },
  {
    kind: 'secret-assignment',
    // In prose (`the password is hunter2!`): a value with a digit or a symbol, so that words
    // (`the password is rotated weekly`) stay.
    pattern:
      /((?:passw(?:or)?d|pass[_-]?phrase)\s+(?:is|was)\s+["'`]?)(?=[^\s"'`]*[\d_!@#$%^&*+=~-])([^\s"'`,;]{4,})/gi,
    group: 2,
  },
  {
    kind: 'secret-assignment',
    // A password is a secret however short (`password=hunter2`); keys and tokens below are
    // long, and a short value after their names is usually not one (`token: none`).
    // `pwd` is a password unless it is the shell's working directory (`PWD=/home/...`,
    // `OLDPWD=`): a path is not a secret.
    // `pass` alone too (`DB_PASS: hunter2`, `SMTP_PASS=`), not inside a word (`bypass`).
    pattern:
      /((?:passw(?:or)?d|pass[_-]?phrase|(?<![A-Za-z])pass(?![A-Za-z])|(?<![A-Za-z])pwd)["']?\s*[:=]\s*["']?)(?![/~])([^\s"',;]{4,})/gi,
    group: 2,
  },
  {
    kind: 'secret-assignment',
    pattern:
      // From the key word on (`my_api_key = …` matches at `api_key`): the rest of the name stays
      // as it is, outside the match.
      /((?:api[_-]?key|secret(?:[_-]?key)?|token|passw(?:or)?d|access[_-]?key|private[_-]?key|client[_-]?secret)["']?\s*[:=]\s*["']?)([^\s"',;]{8,})/gi,
    group: 2,
  },
];

export interface RedactionResult {
  text: string;
  redactions: Redaction[];
}

function placeholder(kind: string): string {
  return `[REDACTED:${kind}]`;
}

/**
 * Replaces secrets (API keys, bearer tokens, private keys, passwords in URLs and assignments)
 * with `[REDACTED:<kind>]` and reports how many of each kind were found in `field`.
 * Already-redacted placeholders are left alone, so redacting twice changes nothing.
 */
export function redactSecrets(text: string, field: string): RedactionResult {
  const counts = new Map<string, number>();
  let out = text;
  for (const { kind, pattern, group } of PATTERNS) {
    pattern.lastIndex = 0;
    out = out.replace(pattern, (match: string, ...rest: unknown[]) => {
      // rest = capture groups, then offset and the whole string (no named groups are used).
      const groups = rest.slice(0, -2).map((part) => (typeof part === 'string' ? part : ''));
      const secret = group === 0 ? match : (groups[group - 1] ?? '');
      if (secret === '' || secret.startsWith('[REDACTED:')) return match;
      counts.set(kind, (counts.get(kind) ?? 0) + 1);
      if (group === 0) return placeholder(kind);
      return `${groups.slice(0, group - 1).join('')}${placeholder(kind)}${groups.slice(group).join('')}`;
    });
  }
  const redactions = [...counts].map(([kind, count]) => ({ field, kind, count }));
  return { text: out, redactions };
}

/**
 * Refuses a secret in an identifier (a key, a tag, a scope key, a source id): identifiers are
 * stored and matched as given, so one is never rewritten; a secret there is a 400 naming the
 * field and the kind, before anything touches disk.
 */
export function assertNoSecret(
  text: string | null | undefined,
  field: string,
  why = 'identifiers are stored as given, so they may not hold one',
): void {
  if (!text) return;
  const [found] = redactSecrets(text, field).redactions;
  if (!found) return;
  throw new CtxbusError(
    'validation_failed',
    `${field}: looks like a secret (${found.kind}); ${why}`,
    {
      details: { field, reason: 'secret_in_identifier', kind: found.kind },
    },
  );
}

/**
 * assertNoSecret over every string inside a JSON value (a task's input: run as given); an array
 * of strings (an argv) is also read as the line it makes, where an option and its value meet
 * (`-u`, `admin:hunter2`).
 */
export function assertNoSecretInJson(value: unknown, field: string, why: string): void {
  if (typeof value === 'string') assertNoSecret(value, field, why);
  else if (Array.isArray(value)) {
    for (const [index, child] of value.entries()) {
      assertNoSecretInJson(child, `${field}[${index}]`, why);
    }
    if (value.length > 1 && value.every((child) => typeof child === 'string')) {
      assertNoSecret(value.join(' '), field, why);
    }
  } else if (value !== null && typeof value === 'object') {
    for (const [name, child] of Object.entries(value)) {
      assertNoSecretInJson(child, `${field}.${name}`, why);
    }
  }
}

/** Redacts every string inside a JSON value; field names are JSON-pointer-like paths. */
export function redactJson(
  value: unknown,
  field: string,
): { value: unknown; redactions: Redaction[] } {
  const redactions: Redaction[] = [];
  const walk = (node: unknown, path: string): unknown => {
    if (typeof node === 'string') {
      const result = redactSecrets(node, path);
      redactions.push(...result.redactions);
      return result.text;
    }
    if (Array.isArray(node)) return node.map((child, index) => walk(child, `${path}/${index}`));
    if (node !== null && typeof node === 'object') {
      // fromEntries defines own properties, so a key named __proto__ is kept as a key.
      return Object.fromEntries(
        Object.entries(node).map(([name, child]) => [
          name,
          /passw|secret|token|api[_-]?key/i.test(name) && typeof child === 'string'
            ? countAndReplace(child, `${path}/${name}`)
            : walk(child, `${path}/${name}`),
        ]),
      );
    }
    return node;
  };
  const countAndReplace = (secret: string, path: string): string => {
    if (secret.length === 0 || secret.startsWith('[REDACTED:')) return secret;
    redactions.push({ field: path, kind: 'secret-field', count: 1 });
    return placeholder('secret-field');
  };
  return { value: walk(value, field), redactions };
}
