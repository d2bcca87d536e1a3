import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ScratchSchemas, withPostgresServer } from '@ctxbus/store/testing';
import pg from 'pg';
import { afterAll } from 'vitest';
import type { HubFixture, HubFixtureOptions } from './hub-fixture.ts';
import type { TestHub } from './hub-process.ts';
import { tempDir } from './hub-process.ts';

export { ScratchSchemas };

/**
 * Defines `define(url)`'s tests when a PostgreSQL server answers. Without one they are skipped
 * with the reason printed, unless CI=true or CTXBUS_REQUIRE_POSTGRES=1: then a failing test
 * says why (CI must never skip them silently).
 */
export async function withPostgres(
  name: string,
  define: (url: string, schemas: ScratchSchemas) => void,
): Promise<void> {
  await withPostgresServer(name, (url) => {
    const schemas = new ScratchSchemas(url);
    afterAll(() => schemas.dropAll());
    define(url, schemas);
  });
}

/** `url` with `?schema=` set, as `ctxbus serve --store` takes it. */
export function storeUrl(url: string, schema: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('schema', schema);
  return parsed.toString();
}

/** Runs one SQL statement on its own connection (for sabotage: pg_terminate_backend...). */
export async function sql<T extends pg.QueryResultRow = pg.QueryResultRow>(
  url: string,
  text: string,
  values: unknown[] = [],
): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/** The repository's capabilities.yaml (claude-code runs code; OpenClaw proxies to it). */
const REPO_CAPABILITIES = join(import.meta.dirname, '../../../capabilities.yaml');

/** A hub fixture with `useHubProcess`'s options: it, or one that runs the hub another way. */
export type UseHubFixture<Hub extends TestHub> = <Name extends string = never>(
  options: HubFixtureOptions<Name, Hub>,
) => HubFixture<Name, Hub>;

/**
 * Two hubs on one PostgreSQL schema (`schemas.next(label)`), each started by `useHub`
 * (`useHubProcess`, or a fixture that runs the hub in process), both with a copy of the
 * repository's capabilities.yaml; hub A holds an OpenClaw and a Claude Code token of team acme.
 * Call it inside a `describe`: the hubs start before its tests and stop after them.
 */
export function useHubPair<Hub extends TestHub>(
  url: string,
  schemas: ScratchSchemas,
  label: string,
  useHub: UseHubFixture<Hub>,
) {
  const schema = schemas.next(label);
  const file = join(tempDir(`ctxbus-${label}-pg-`), 'capabilities.yaml');
  writeFileSync(file, readFileSync(REPO_CAPABILITIES, 'utf8'));
  const a = useHub({
    store: storeUrl(url, schema),
    args: ['--capabilities', file],
    tokens: { claw: ['acme', 'openclaw'], code: ['acme', 'claude-code'] },
  });
  const b = useHub({ store: storeUrl(url, schema), args: ['--capabilities', file] });
  return { a, b };
}
