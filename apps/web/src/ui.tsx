import type { ContextItem } from '@ctxbus/adapter-web';
import type { ComponentChildren } from 'preact';

/** One line for an error from the hub (its code and message) or anything else. */
export function errorText(error: unknown): string {
  if (error && typeof error === 'object' && 'code' in error && 'message' in error) {
    return `${String(error.code)}: ${String(error.message)}`;
  }
  return error instanceof Error ? error.message : String(error);
}

export function ErrorBox({ error }: { error: unknown }) {
  if (error === null || error === undefined) return null;
  return (
    <p class="error" role="alert">
      {errorText(error)}
    </p>
  );
}

export function Badge({ kind, children }: { kind: string; children: ComponentChildren }) {
  return <span class={`badge badge-${kind}`}>{children}</span>;
}

export function UrgencyBadge({ item }: { item: Pick<ContextItem, 'urgency'> }) {
  return <Badge kind={item.urgency}>{item.urgency}</Badge>;
}

const timeFormat = new Intl.DateTimeFormat(undefined, {
  dateStyle: 'medium',
  timeStyle: 'medium',
});

export function Time({ iso }: { iso: string | null }) {
  if (!iso) return <span>never</span>;
  return <time dateTime={iso}>{timeFormat.format(new Date(iso))}</time>;
}

/** A wide table that scrolls sideways on a phone, reachable by keyboard. */
export function TableScroll({
  label,
  className = 'table-scroll',
  children,
}: {
  label: string;
  className?: string;
  children: ComponentChildren;
}) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must take focus to scroll by keyboard
    <section class={className} aria-label={label} tabIndex={0}>
      {children}
    </section>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}
