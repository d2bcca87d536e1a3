import { parse } from 'yaml';

/** A document's front matter (`---` lines at the top) and the body after it. */
export interface ParsedDocument {
  meta: Record<string, unknown>;
  body: string;
}

/**
 * Renders front matter with one `key: value` line per field, each value as JSON (which YAML
 * reads too). Undefined fields are left out; the order is the caller's.
 */
export function renderFrontMatter(meta: Record<string, unknown>): string {
  const lines = Object.entries(meta)
    .filter(([, value]) => value !== undefined)
    .map(
      ([key, value]) =>
        `${key}: ${typeof value === 'string' && /^[\w.:+-]+$/.test(value) ? value : JSON.stringify(value)}`,
    );
  return `---\n${lines.join('\n')}\n---\n`;
}

function lenientValue(raw: string): unknown {
  const text = raw.trim();
  if (text === '') return '';
  if (/^[[{"]/.test(text) || /^-?\d+(\.\d+)?$/.test(text) || text === 'true' || text === 'false') {
    try {
      return JSON.parse(text);
    } catch {
      if (text.startsWith('[') && text.endsWith(']')) {
        return text
          .slice(1, -1)
          .split(',')
          .map((part) => part.trim().replace(/^['"]|['"]$/g, ''))
          .filter((part) => part.length > 0);
      }
      return text;
    }
  }
  return text.replace(/^'(.*)'$/, '$1');
}

/**
 * What people write that YAML refuses (`title: Decision: use Postgres`, a colon in a plain
 * value): read line by line, `key: value` lines and `- item` block lists under a bare key, so a
 * hand-written note keeps its fields.
 */
function lenientMeta(block: string): Record<string, unknown> {
  const meta: Record<string, unknown> = {};
  let listKey: string | null = null;
  for (const line of block.split('\n')) {
    const item = /^\s+-\s+(.*)$/.exec(line);
    if (item && listKey !== null) {
      const list = meta[listKey];
      if (Array.isArray(list)) list.push(lenientValue(item[1] ?? ''));
      continue;
    }
    const field = /^([A-Za-z_][\w-]*):\s*(.*)$/.exec(line);
    if (!field?.[1]) continue;
    if ((field[2] ?? '').trim() === '') {
      meta[field[1]] = [];
      listKey = field[1];
    } else {
      meta[field[1]] = lenientValue(field[2] ?? '');
      listKey = null;
    }
  }
  return meta;
}

/** The front matter as YAML (the `yaml` package, YAML 1.2 core schema), or null if refused. */
function yamlMeta(block: string): Record<string, unknown> | null {
  try {
    const value: unknown = parse(block);
    if (value === null || value === undefined) return {};
    return typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

/**
 * Reads a document's front matter as YAML (block and flow lists, multi-line strings, nested
 * maps); one that YAML refuses is read line by line instead (`lenientMeta`). A document
 * without front matter has `meta` `{}`.
 */
export function parseDocument(text: string): ParsedDocument {
  const normalised = text.replace(/\r\n/g, '\n');
  if (!normalised.startsWith('---\n')) return { meta: {}, body: normalised };
  const end = normalised.indexOf('\n---', 4);
  if (end < 0) return { meta: {}, body: normalised };
  const after = normalised.indexOf('\n', end + 4);
  const body = after < 0 ? '' : normalised.slice(after + 1);
  const block = normalised.slice(4, end);
  return { meta: yamlMeta(block) ?? lenientMeta(block), body };
}

/** A list field of the front matter as strings (a lone string becomes a one-item list). */
export function stringList(value: unknown): string[] {
  if (typeof value === 'string') return value.trim() ? [value.trim()] : [];
  if (!Array.isArray(value)) return [];
  return value
    .filter((entry): entry is string => typeof entry === 'string' && entry.trim() !== '')
    .map((entry) => entry.trim());
}
