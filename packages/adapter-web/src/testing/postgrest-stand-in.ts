// For tests only: the part of Supabase's Data API (PostgREST, under /rest/v1) that supabase-js
// sends for `.schema(s).from(table).select(cols)` with eq, in, ov, gte, is filters, order and
// limit. Each request runs as PostgREST runs it: the JWT checked with the project's secret,
// then `SET LOCAL ROLE <its role>` with its claims in `request.jwt.claims`, so row-level
// security decides what comes back.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { queryAsSupabaseRole } from '@ctxbus/store/testing';
import pg from 'pg';
import { verifyJwt } from './supabase-jwt.js';

export interface RecordedRequest {
  method: string;
  path: string;
  query: [string, string][];
  headers: IncomingMessage['headers'];
  status: number;
}

export interface PostgrestOptions {
  /** A login role that may SET ROLE to Supabase's API roles (the stand-in database's owner). */
  databaseUrl: string;
  jwtSecret: string;
  /** The schemas "exposed" in the API settings. */
  schemas: string[];
}

const API_ROLES = new Set(['anon', 'authenticated', 'service_role']);
const COLUMN = /^[a-z_][a-z0-9_]*$/;
const lit = (value: string) => pg.escapeLiteral(value);
const ident = (name: string) => {
  if (!COLUMN.test(name)) throw new Error(`not a column: ${name}`);
  return `"${name}"`;
};
/** `(a,"b c")` or `{a,b}` as values. */
const listOf = (text: string) =>
  text
    .slice(1, -1)
    .split(',')
    .filter((part) => part !== '')
    .map((part) => part.replace(/^"(.*)"$/, '$1'));

/** One PostgREST filter (`col=op.value`) as SQL. */
function condition(column: string, filter: string): string {
  const dot = filter.indexOf('.');
  const op = filter.slice(0, dot);
  const value = filter.slice(dot + 1);
  const col = ident(column);
  switch (op) {
    case 'eq':
      return `${col} = ${lit(value)}`;
    case 'gte':
      return `${col} >= ${lit(value)}`;
    case 'in':
      return `${col} IN (${listOf(value).map(lit).join(', ')})`;
    case 'ov':
      return `${col} && ARRAY[${listOf(value).map(lit).join(', ')}]::text[]`;
    case 'is':
      if (value !== 'null') throw new Error(`is.${value} is not supported here`);
      return `${col} IS NULL`;
    default:
      throw new Error(`the operator ${op} is not supported here`);
  }
}

/** Answers one request under /rest/v1, recording it in `requests`. */
export function handlePostgrest(
  options: PostgrestOptions,
  requests: RecordedRequest[],
  request: IncomingMessage,
  response: ServerResponse,
): void {
  const url = new URL(request.url ?? '/', 'http://stand-in');
  const record: RecordedRequest = {
    method: request.method ?? '',
    path: url.pathname,
    query: [...url.searchParams],
    headers: request.headers,
    status: 0,
  };
  requests.push(record);
  const answer = (status: number, body: unknown) => {
    record.status = status;
    response.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
    response.end(JSON.stringify(body));
  };
  const error = (status: number, code: string, message: string) =>
    answer(status, { code, details: null, hint: null, message });
  void (async () => {
    const table = /^\/rest\/v1\/([a-z_]+)$/.exec(url.pathname)?.[1];
    if (request.method !== 'GET' || !table) return error(404, 'PGRST125', 'Invalid path');
    const schema = request.headers['accept-profile'] ?? 'public';
    if (typeof schema !== 'string' || !options.schemas.includes(schema)) {
      return error(
        406,
        'PGRST106',
        `The schema must be one of the following: ${options.schemas.join(', ')}`,
      );
    }
    const token = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    if (!token) return error(401, 'PGRST302', 'No suitable key or wrong key type');
    const verified = verifyJwt(token, options.jwtSecret);
    if ('refused' in verified) {
      return error(
        401,
        verified.refused === 'JWT expired' ? 'PGRST303' : 'PGRST301',
        verified.refused,
      );
    }
    const role = String(verified.claims.role ?? '');
    if (!API_ROLES.has(role)) return error(401, 'PGRST301', `role "${role}" does not exist`);
    let select = '*';
    let order = '';
    let limit = '';
    const where: string[] = [];
    for (const [name, value] of url.searchParams) {
      if (name === 'select') select = value.split(',').map(ident).join(', ');
      else if (name === 'order') {
        const [column = '', direction] = value.split('.');
        order = ` ORDER BY ${ident(column)} ${direction === 'desc' ? 'DESC' : 'ASC'}`;
      } else if (name === 'limit') limit = ` LIMIT ${Number.parseInt(value, 10)}`;
      else where.push(condition(name, value));
    }
    const text = `SELECT coalesce(json_agg(t), '[]') AS body FROM (SELECT ${select} FROM "${schema}".${ident(table)}${
      where.length ? ` WHERE ${where.join(' AND ')}` : ''
    }${order}${limit}) AS t`;
    const outcome = await queryAsSupabaseRole(
      options.databaseUrl,
      role as 'authenticated',
      verified.claims,
      text,
    );
    if ('denied' in outcome) {
      // PostgREST: permission denied is 401 for anon, 403 for a signed-in role.
      return error(
        role === 'anon' ? 401 : 403,
        outcome.denied,
        `permission denied for table ${table}`,
      );
    }
    answer(200, outcome.rows[0]?.body ?? []);
  })().catch((caught: unknown) => error(400, 'PGRST100', (caught as Error).message));
}
