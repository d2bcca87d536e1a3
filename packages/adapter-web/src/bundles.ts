import type { ContextItem, SharedContextResponse } from '@ctxbus/core/contract';

/** The token budget of the Markdown bundle for in-page AI features (the `web` resolver's). */
export const DEFAULT_MARKDOWN_BUDGET = 4_000;

/** One entry of a sidebar section: the hub's text and the items behind it. */
export interface SidebarEntry {
  id: string;
  text: string;
  mode: 'full' | 'compact';
  refs: { id: string; seq: number }[];
  /** The items the entry was built from (those the hub sent; the `web` resolver sends them all). */
  items: ContextItem[];
}

export interface SidebarSection {
  id: string;
  title: string;
  entries: SidebarEntry[];
}

/** The `web` resolver's structured bundle, for a sidebar. */
export interface SidebarBundle {
  sections: SidebarSection[];
  totalTokens: number;
  tokenBudget: number;
  contextHash: string;
  trimmed: boolean;
  warnings: SharedContextResponse['warnings'];
}

/** The token-budgeted Markdown bundle, for an in-page AI feature's prompt. */
export interface MarkdownBundle {
  markdown: string;
  totalTokens: number;
  tokenBudget: number;
  contextHash: string;
  trimmed: boolean;
}

/** The sidebar view of a `GET /api/context/shared?runtime=web` answer (sections unchanged). */
export function toSidebarBundle(shared: SharedContextResponse): SidebarBundle {
  const byId = new Map((shared.items ?? []).map((item) => [item.id, item]));
  return {
    sections: shared.sections.map((section) => ({
      id: section.id,
      title: section.title,
      entries: section.entries.map((entry) => ({
        id: entry.id,
        text: entry.text,
        mode: entry.mode,
        refs: entry.refs,
        items: entry.refs.flatMap((ref) => {
          const item = byId.get(ref.id);
          return item ? [item] : [];
        }),
      })),
    })),
    totalTokens: shared.totalTokens,
    tokenBudget: shared.tokenBudget,
    contextHash: shared.contextHash,
    trimmed: shared.trim.trimmed,
    warnings: shared.warnings,
  };
}

/** The Markdown view of a shared-context answer (`formattedMarkdown`, exactly as sent). */
export function toMarkdownBundle(shared: SharedContextResponse): MarkdownBundle {
  return {
    markdown: shared.formattedMarkdown,
    totalTokens: shared.totalTokens,
    tokenBudget: shared.tokenBudget,
    contextHash: shared.contextHash,
    trimmed: shared.trim.trimmed,
  };
}
