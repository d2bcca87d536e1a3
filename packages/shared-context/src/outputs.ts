import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseDocument, stringList } from './front-matter.js';
import type { SharedContextPaths } from './paths.js';
import { AGENT_ID_PATTERN } from './paths.js';

/** One agent output file, parsed. */
export interface AgentOutput {
  /** Relative to the root: `agent-outputs/<agent>/…`. */
  relPath: string;
  path: string;
  agent: string;
  /** Front matter `timestamp`, else the `YYYY-MM-DD` folder at midnight UTC, else the mtime. */
  timestamp: Date;
  title: string;
  tags: string[];
  entities: string[];
  body: string;
}

/** Files under a directory, depth first, sorted; dotfiles and symbolic links are skipped. */
export function walkFiles(dir: string, rel = ''): string[] {
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch {
    return [];
  }
  const files: string[] = [];
  for (const name of names) {
    if (name.startsWith('.')) continue;
    const path = join(dir, name);
    const stat = lstatSync(path, { throwIfNoEntry: false });
    if (!stat || stat.isSymbolicLink()) continue;
    const relPath = rel ? `${rel}/${name}` : name;
    if (stat.isDirectory()) files.push(...walkFiles(path, relPath));
    else if (stat.isFile()) files.push(relPath);
  }
  return files;
}

const ENTITIES_HEADING = /^\s*(?:#{1,6}\s*)?\**entities\**\s*:?\s*\**\s*(.*)$/i;
const LIST_ITEM = /^\s*[-*+]\s+(.+?)\s*$/;
const HASHTAG = /(?:^|[\s(,;])#([A-Za-z][\w-]{0,62})/g;

/** Entities listed in an `Entities:` section (one per list line, or comma-separated inline). */
export function entitiesFromBody(body: string): string[] {
  const found: string[] = [];
  const lines = body.split('\n');
  for (let index = 0; index < lines.length; index++) {
    const match = ENTITIES_HEADING.exec(lines[index] ?? '');
    if (!match) continue;
    const inline = (match[1] ?? '').trim();
    if (inline)
      found.push(
        ...inline
          .split(',')
          .map((part) => part.trim())
          .filter(Boolean),
      );
    for (let next = index + 1; next < lines.length; next++) {
      const item = LIST_ITEM.exec(lines[next] ?? '');
      if (!item?.[1]) break;
      found.push(item[1]);
    }
  }
  return found;
}

/** The body without its `Entities:` section (the heading line and the list under it). */
export function withoutEntitiesSection(body: string): string {
  const lines = body.split('\n');
  const kept: string[] = [];
  for (let index = 0; index < lines.length; index++) {
    if (!ENTITIES_HEADING.test(lines[index] ?? '')) {
      kept.push(lines[index] ?? '');
      continue;
    }
    while (index + 1 < lines.length && LIST_ITEM.test(lines[index + 1] ?? '')) index++;
  }
  return kept.join('\n');
}

/** `#hashtags` in a body. */
export function hashtagsFromBody(body: string): string[] {
  return [...body.matchAll(HASHTAG)].map((match) => match[1] ?? '').filter(Boolean);
}

/** A file's title: its front matter's, else its first `#` heading, else its name. */
export function titleOf(meta: Record<string, unknown>, body: string, file: string): string {
  if (typeof meta.title === 'string' && meta.title.trim()) return meta.title.trim();
  const heading = /^#\s+(.+)$/m.exec(body);
  return heading?.[1]?.trim() ?? file.replace(/\.md$/, '');
}

function timestampOf(meta: Record<string, unknown>, relPath: string, mtime: Date): Date {
  if (typeof meta.timestamp === 'string') {
    const parsed = new Date(meta.timestamp);
    if (!Number.isNaN(parsed.getTime())) return parsed;
  }
  const day = /\/(\d{4}-\d{2}-\d{2})\//.exec(relPath)?.[1];
  if (day) return new Date(`${day}T00:00:00.000Z`);
  return mtime;
}

/** Reads one output file (relative path under the root). */
export function readAgentOutput(paths: SharedContextPaths, relPath: string): AgentOutput | null {
  const [top, agent] = relPath.split('/');
  if (top !== 'agent-outputs' || !agent || !AGENT_ID_PATTERN.test(agent)) return null;
  const path = join(paths.root, ...relPath.split('/'));
  const stat = lstatSync(path, { throwIfNoEntry: false });
  if (!stat?.isFile()) return null;
  const { meta, body } = parseDocument(readFileSync(path, 'utf8'));
  return {
    relPath,
    path,
    agent,
    timestamp: timestampOf(meta, relPath, stat.mtime),
    title: titleOf(meta, body, relPath.split('/').at(-1) ?? relPath),
    tags: [...stringList(meta.tags), ...hashtagsFromBody(body)],
    entities: [...stringList(meta.entities), ...entitiesFromBody(body)],
    body,
  };
}

/**
 * Every Markdown output under `agent-outputs/`, sorted by relative path; with `from`/`to`,
 * only those whose timestamp is in `[from, to)`.
 */
export function listAgentOutputs(
  paths: SharedContextPaths,
  window: { from?: Date; to?: Date } = {},
): AgentOutput[] {
  const outputs: AgentOutput[] = [];
  for (const file of walkFiles(paths.agentOutputs)) {
    if (!file.endsWith('.md')) continue;
    const output = readAgentOutput(paths, `agent-outputs/${file}`);
    if (!output) continue;
    const time = output.timestamp.getTime();
    if (window.from && time < window.from.getTime()) continue;
    if (window.to && time >= window.to.getTime()) continue;
    outputs.push(output);
  }
  return outputs;
}

/**
 * The key two mentions share when they name the same thing: lowercase, accents and
 * punctuation dropped, spaces collapsed, and a simple plural on the last word made singular
 * (`Agents` -> `agent`, `Companies` -> `company`).
 */
export function normaliseTerm(term: string): string {
  const words = term
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, ' ')
    .trim()
    .split(' ')
    .filter(Boolean);
  const last = words.at(-1);
  if (last !== undefined) words[words.length - 1] = singular(last);
  return words.join(' ');
}

function singular(word: string): string {
  if (word.length > 4 && word.endsWith('ies')) return `${word.slice(0, -3)}y`;
  if (word.length > 4 && /(sses|xes|ches|shes)$/.test(word)) return word.slice(0, -2);
  if (word.length > 3 && word.endsWith('s') && !/(ss|us|is)$/.test(word)) return word.slice(0, -1);
  return word;
}
