import type { WebClient } from '@ctxbus/adapter-web';
import { CONTEXT_TYPES, SCOPES, URGENCIES, VISIBILITIES } from '@ctxbus/core/contract';
import { useState } from 'preact/hooks';
import { href } from '../router.js';
import { ErrorBox, SelectField } from '../ui.js';

interface Written {
  id: string;
  seq: number;
  title: string;
}

function Text(props: { name: string; label: string; hint?: string; numeric?: boolean }) {
  const id = `write-${props.name}`;
  const described = props.hint ? `${id}-hint` : undefined;
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      {props.numeric ? (
        <input id={id} name={props.name} type="number" min={1} aria-describedby={described} />
      ) : (
        <input id={id} name={props.name} aria-describedby={described} />
      )}
      {props.hint && (
        <small id={`${id}-hint`} class="hint">
          {props.hint}
        </small>
      )}
    </div>
  );
}

/** Writes one item as the signed-in runtime; the hub validates and redacts as for any writer. */
export function WriteView({ client }: { client: WebClient }) {
  const [written, setWritten] = useState<Written | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const data = new FormData(form);
    const text = (name: string) => String(data.get(name) ?? '').trim();
    const tags = text('tags')
      .split(',')
      .map((tag) => tag.trim())
      .filter(Boolean);
    const ttl = text('ttl');
    setBusy(true);
    setError(null);
    setWritten(null);
    try {
      const response = await client.write({
        type: text('type') as (typeof CONTEXT_TYPES)[number],
        title: text('title'),
        content: text('content'),
        urgency: text('urgency') as (typeof URGENCIES)[number],
        scope: text('scope') as (typeof SCOPES)[number],
        visibility: text('visibility') as (typeof VISIBILITIES)[number],
        ...(text('scopeKey') && { scopeKey: text('scopeKey') }),
        ...(tags.length > 0 && { relevanceTags: tags }),
        ...(ttl && { expiresAfterSeconds: Number(ttl) }),
        ...(text('key') && { key: text('key') }),
        ...(text('supersedes') && { supersedes: text('supersedes') }),
      });
      const [first] = response.items;
      if (first) setWritten({ id: first.id, seq: first.seq, title: text('title') });
      form.reset();
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section aria-labelledby="view-title">
      <h1 id="view-title" tabIndex={-1}>
        Write an item
      </h1>
      <form class="write" onSubmit={submit} aria-describedby="write-note">
        <p id="write-note" class="hint">
          Written as this dashboard's runtime. Secrets in the text are redacted by the hub.
        </p>
        <div class="row">
          <SelectField
            id="write-type"
            name="type"
            label="Type"
            options={CONTEXT_TYPES}
            defaultValue="discovery"
          />
          <SelectField
            id="write-urgency"
            name="urgency"
            label="Urgency"
            options={URGENCIES}
            defaultValue="background"
          />
          <SelectField
            id="write-scope"
            name="scope"
            label="Scope"
            options={SCOPES}
            defaultValue="global"
          />
          <SelectField
            id="write-visibility"
            name="visibility"
            label="Visibility"
            options={VISIBILITIES}
            defaultValue="team"
          />
        </div>
        <div class="field">
          <label for="write-title">Title</label>
          <input id="write-title" name="title" required maxLength={500} />
        </div>
        <div class="field">
          <label for="write-content">Content</label>
          <textarea id="write-content" name="content" rows={6} />
        </div>
        <div class="row">
          <Text name="tags" label="Tags" hint="comma-separated" />
          <Text name="scopeKey" label="Scope key" hint="task:…, thread:… or your own" />
          <Text name="ttl" label="Expires after (seconds)" numeric />
          <Text name="key" label="Key" hint="a keyed item replaces the last one with the key" />
          <Text name="supersedes" label="Supersedes (item id)" />
        </div>
        <button type="submit" disabled={busy}>
          {busy ? 'Writing…' : 'Write'}
        </button>
      </form>
      <ErrorBox error={error} />
      {written && (
        <p class="ok" role="status" data-testid="write-result">
          Written as sequence {written.seq}: <a href={href('item', written.id)}>{written.title}</a>
        </p>
      )}
    </section>
  );
}
