import type { ContextItem } from '@ctxbus/adapter-web';
import type { ComponentChildren } from 'preact';

/** One line for an error from the hub (its code and message) or anything else. */
export function errorText(error: unknown): string {
  if (error && typeof error === 'object' && 'code' in error && 'message' in error) {
    // The client's words for a hub it cannot reach name CLI flags; this page is served by the
    // hub, so it says so, and that it tries again.
    if (error.code === 'unavailable' && String(error.message).startsWith('cannot reach')) {
      return 'unavailable: cannot reach the ctxbus hub that serves this page (stopped, or the network is down); trying again';
    }
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

/** A labelled select; `any` adds a first, empty choice (a filter that is off). */
export function SelectField(props: {
  id: string;
  label: string;
  options: readonly string[];
  any?: string;
  name?: string;
  value?: string;
  defaultValue?: string;
  onChange?: (value: string) => void;
}) {
  const { onChange } = props;
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      <select
        id={props.id}
        name={props.name}
        value={props.value}
        defaultValue={props.defaultValue}
        onChange={onChange && ((event) => onChange(event.currentTarget.value))}
      >
        {props.any !== undefined && <option value="">{props.any}</option>}
        {props.options.map((option) => (
          <option key={option} value={option}>
            {option}
          </option>
        ))}
      </select>
    </div>
  );
}
