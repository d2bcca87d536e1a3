import type {
  ContextEntry,
  ContextFormatter,
  ContextSection,
  DocumentHeader,
  EntryMode,
  RenderedSection,
} from './context-builder.js';

function day(iso: string | undefined): string | undefined {
  return iso?.slice(0, 10);
}

function metaLine(entry: ContextEntry): string {
  const parts: string[] = [];
  if (entry.meta.urgency && entry.meta.urgency !== 'background') parts.push(entry.meta.urgency);
  if (entry.meta.runtime) parts.push(`from ${entry.meta.runtime}`);
  const date = day(entry.meta.createdAt);
  if (date) parts.push(date);
  return parts.join(', ');
}

/** The metadata a compacted entry keeps: its urgency (above background) and its writer. */
function compactMeta(entry: ContextEntry): string {
  const parts: string[] = [];
  if (entry.meta.urgency && entry.meta.urgency !== 'background') parts.push(entry.meta.urgency);
  if (entry.meta.runtime) parts.push(`from ${entry.meta.runtime}`);
  return parts.join(', ');
}

/**
 * A title or summary on one line of Markdown that stays inline: its emphasis marks escaped (it
 * cannot close the bold around it) and its tags written as text.
 */
export function inertInline(text: string): string {
  return text
    .replace(/\s*[\r\n\u0085\u2028\u2029]\s*/g, ' ')
    .replace(/[*_`]/g, (mark) => `\\${mark}`)
    .replace(/<(?=\/?[A-Za-z!?])/g, '&lt;')
    .trim();
}

/** Any line break an agent may use (a lone CR, NEL and the Unicode separators too). */
const LINE_BREAK = /\r\n|[\r\n\u0085\u2028\u2029]/;

/**
 * An item's text as Markdown that stays inside the entry that frames it (context is data): a
 * heading, a code fence or a block quote at a line's start is escaped (`\## Context Update`),
 * and a tag (`</system-reminder>`, `<system>`) is written as text (`&lt;/system-reminder>`), so
 * no item can end its entry, open a section of its own, or close a wrapper around the context.
 */
export function inertMarkdown(text: string): string {
  return text
    .split(LINE_BREAK)
    .map((line) =>
      line.replace(
        /^(\s*)(#{1,6}(?=\s|$)|`{3,}|~{3,}|>)/,
        (_match, space: string, mark: string) =>
          `${space}${mark.replace(/./g, (char) => `\\${char}`)}`,
      ),
    )
    .join('\n')
    .replace(/<(?=\/?[A-Za-z!?])/g, '&lt;');
}

/** Markdown for Claude Code and the web: one bullet per entry, body indented under it. */
export const markdownFormatter: ContextFormatter = {
  format: 'markdown',
  renderEntry(entry: ContextEntry, mode: EntryMode): string {
    const label = entry.meta.label ? `\`${entry.meta.label}\` ` : '';
    const head = `- ${label}**${inertInline(entry.title)}**`;
    const meta = metaLine(entry);
    if (mode === 'compact') {
      // Cut to fit, an entry still names who wrote it and how urgent it is (context is data),
      // without the date.
      const short = compactMeta(entry);
      const labelled = short ? `${head} _(${short})_` : head;
      const summary = inertInline(entry.summary);
      return summary && summary !== inertInline(entry.title) ? `${labelled}: ${summary}` : labelled;
    }
    const body = inertMarkdown(entry.body.trim());
    const suffix = meta ? ` _(${meta})_` : '';
    if (!body || body === entry.title.trim()) return `${head}${suffix}`;
    const [first = '', ...rest] = body.split('\n');
    const continuation = rest.map((line) => (line.trim() ? `  ${line}` : '')).join('\n');
    return `${head}${suffix}: ${first}${continuation ? `\n${continuation}` : ''}`;
  },
  renderDocument(header: DocumentHeader, sections: RenderedSection[]): string {
    const parts = [`# ${header.title}`];
    if (header.lines.length > 0) parts.push(header.lines.join('\n'));
    for (const { section, lines } of sections)
      parts.push(`## ${section.title}\n${lines.join('\n')}`);
    return parts.join('\n\n');
  },
};

const MARKDOWN_NOISE = /(\*\*|__|`+|^#+\s+|^>\s+|\[([^\]]*)\]\([^)]*\))/gm;

/** Flattens Markdown to one line of plain text (links keep their label). */
export function plainLine(text: string): string {
  return text
    .replace(MARKDOWN_NOISE, (_match, _all, label: string | undefined) => label ?? '')
    .replace(/\s+/g, ' ')
    .trim();
}

export function hasMarkdownOrLines(text: string): boolean {
  MARKDOWN_NOISE.lastIndex = 0;
  const found = /\n/.test(text.trim()) || MARKDOWN_NOISE.test(text);
  MARKDOWN_NOISE.lastIndex = 0;
  return found;
}

/** Terse plain text for a chat (OpenClaw over Telegram): one line per entry, no Markdown. */
export const plainTextFormatter: ContextFormatter = {
  format: 'text',
  renderEntry(entry: ContextEntry, mode: EntryMode, _section: ContextSection): string {
    const label = entry.meta.label ? `${entry.meta.label} ` : '';
    const urgent =
      entry.meta.urgency && entry.meta.urgency !== 'background' ? ` [${entry.meta.urgency}]` : '';
    // Context is data: each entry names the runtime that wrote it, as the Markdown one does.
    const from = entry.meta.runtime ? ` (from ${entry.meta.runtime})` : '';
    const title = plainLine(entry.title);
    if (mode === 'compact') return `- ${label}${title}${urgent}${from}`;
    const summary = plainLine(entry.summary);
    return summary && summary !== title
      ? `- ${label}${title}${urgent}${from}: ${summary}`
      : `- ${label}${title}${urgent}${from}`;
  },
  renderDocument(header: DocumentHeader, sections: RenderedSection[]): string {
    const parts = [header.title.toUpperCase(), ...header.lines];
    for (const { section, lines } of sections) {
      parts.push(`${section.title.toUpperCase()}:`, ...lines);
    }
    return parts.join('\n');
  },
};
