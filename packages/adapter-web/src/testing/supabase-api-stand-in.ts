// For tests only: one local server answering what supabase-js sends to a Supabase project's
// URL: the Data API under /rest/v1 (postgrest-stand-in.ts) and Realtime's Phoenix socket at
// /realtime/v1/websocket (protocol vsn 2.0.0: JSON arrays [join_ref, ref, topic, event,
// payload]). Realtime's `postgres_changes` is fed from the database itself through logical
// replication (a pgoutput slot on the `supabase_realtime` publication, read every 25 ms, as
// Realtime's own poller reads its slot), each record built as Realtime builds it (to_jsonb of
// every value as its column type), and sent to a subscriber only when the subscriber's role
// and JWT claims can SELECT the row (Realtime's per-subscriber row-level security check).
import { randomInt } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { queryAsSupabaseRole } from '@ctxbus/store/testing';
import pg from 'pg';
import { type WebSocket, WebSocketServer } from 'ws';
import {
  handlePostgrest,
  type PostgrestOptions,
  type RecordedRequest,
} from './postgrest-stand-in.js';
import { type JwtClaims, verifyJwt } from './supabase-jwt.js';

export interface SupabaseApiStandInOptions extends PostgrestOptions {
  /** A connection allowed to create a logical replication slot (a superuser's). */
  replicationUrl: string;
  publication?: string;
}

export interface SupabaseApiStandIn {
  /** The "project URL" to give createClient. */
  readonly url: string;
  /** Data API requests as received. */
  readonly requests: RecordedRequest[];
  /** Realtime `phx_join` payloads as received, with the answer given. */
  readonly joins: { topic: string; payload: Record<string, unknown>; status: 'ok' | 'error' }[];
  /** Heartbeats answered. */
  readonly heartbeats: () => number;
  /** Realtime messages sent, per topic: `postgres_changes` payloads. */
  readonly sent: { topic: string; payload: ChangeMessage }[];
  /** Changes read from the replication slot so far (sent to whoever could see them). */
  readonly changesRead: () => number;
  /**
   * Offline: cuts every Realtime connection and refuses new ones (a dropped network);
   * online again: accepts them.
   */
  setOnline(online: boolean): void;
  close(): Promise<void>;
}

interface Column {
  name: string;
  key: boolean;
  typname: string;
  format: string;
}
interface Relation {
  schema: string;
  table: string;
  columns: Column[];
}
type Tuple = ({ kind: 'text'; value: string } | { kind: 'null' } | { kind: 'unchanged' })[];
interface Subscription {
  id: number;
  event: string;
  schema: string;
  table?: string;
}
interface ChannelState {
  joinRef: string;
  claims: JwtClaims;
  subscriptions: Subscription[];
}
export interface ChangeMessage {
  ids: number[];
  data: {
    schema: string;
    table: string;
    commit_timestamp: string;
    type: 'INSERT' | 'UPDATE' | 'DELETE';
    columns: { name: string; type: string }[];
    record?: Record<string, unknown>;
    old_record?: Record<string, unknown>;
    errors: null;
  };
}

const API_ROLES = new Set(['anon', 'authenticated', 'service_role']);
const PG_EPOCH_MS = Date.UTC(2000, 0, 1);

/** The pgoutput (protocol 1) reader: messages in, a cursor over one message's bytes. */
function reader(data: Buffer) {
  let at = 0;
  const take = (bytes: number) => {
    at += bytes;
    return at - bytes;
  };
  return {
    byte: () => data[take(1)] ?? 0,
    int16: () => data.readInt16BE(take(2)),
    int32: () => data.readInt32BE(take(4)),
    int64: () => data.readBigInt64BE(take(8)),
    cstring() {
      const end = data.indexOf(0, at);
      const text = data.toString('utf8', at, end);
      at = end + 1;
      return text;
    },
    tuple(): Tuple {
      const count = this.int16();
      const values: Tuple = [];
      for (let column = 0; column < count; column += 1) {
        const kind = String.fromCharCode(this.byte());
        if (kind === 't') {
          const length = this.int32();
          values.push({ kind: 'text', value: data.toString('utf8', at, at + length) });
          at += length;
        } else values.push({ kind: kind === 'u' ? 'unchanged' : 'null' });
      }
      return values;
    },
  };
}

export async function startSupabaseApiStandIn(
  options: SupabaseApiStandInOptions,
): Promise<SupabaseApiStandIn> {
  const publication = options.publication ?? 'supabase_realtime';
  const requests: RecordedRequest[] = [];
  const joins: SupabaseApiStandIn['joins'] = [];
  const sent: SupabaseApiStandIn['sent'] = [];
  let heartbeats = 0;
  let changesRead = 0;
  let online = true;
  const sockets = new Map<WebSocket, Map<string, ChannelState>>();

  const server = createServer((request, response) => {
    if (request.url?.startsWith('/rest/v1/')) {
      handlePostgrest(options, requests, request, response);
      return;
    }
    response.writeHead(404).end();
  });
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (request, socket, head) => {
    const url = new URL(request.url ?? '/', 'http://stand-in');
    const apikey = url.searchParams.get('apikey') ?? '';
    if (
      !online ||
      url.pathname !== '/realtime/v1/websocket' ||
      url.searchParams.get('vsn') !== '2.0.0' ||
      'refused' in verifyJwt(apikey, options.jwtSecret)
    ) {
      socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
      return;
    }
    wss.handleUpgrade(request, socket, head, (ws) => {
      const channels = new Map<string, ChannelState>();
      sockets.set(ws, channels);
      ws.on('close', () => sockets.delete(ws));
      ws.on('message', (raw) => onMessage(ws, channels, apikey, String(raw)));
    });
  });

  const send = (ws: WebSocket, message: unknown[]) => ws.send(JSON.stringify(message));

  function onMessage(
    ws: WebSocket,
    channels: Map<string, ChannelState>,
    apikey: string,
    raw: string,
  ) {
    const [joinRef, ref, topic, event, payload] = JSON.parse(raw) as [
      string | null,
      string | null,
      string,
      string,
      Record<string, unknown>,
    ];
    const reply = (status: 'ok' | 'error', response: unknown) =>
      send(ws, [joinRef, ref, topic, 'phx_reply', { status, response }]);
    if (topic === 'phoenix' && event === 'heartbeat') {
      heartbeats += 1;
      return reply('ok', {});
    }
    if (event === 'phx_join') {
      const token = typeof payload.access_token === 'string' ? payload.access_token : apikey;
      const verified = verifyJwt(token, options.jwtSecret);
      const config = (payload.config ?? {}) as { postgres_changes?: Record<string, string>[] };
      const wanted = config.postgres_changes ?? [];
      const refusal =
        'refused' in verified
          ? `Invalid JWT: ${verified.refused}`
          : !API_ROLES.has(String(verified.claims.role))
            ? 'Invalid JWT: unknown role'
            : wanted.some((entry) => entry.filter)
              ? 'filters are not supported by this stand-in'
              : null;
      joins.push({ topic, payload, status: refusal ? 'error' : 'ok' });
      if (refusal || 'refused' in verified) return reply('error', { reason: refusal });
      const subscriptions = wanted.map((entry) => ({
        id: randomInt(1, 2 ** 31),
        event: entry.event ?? '*',
        schema: entry.schema ?? '*',
        ...(entry.table !== undefined && { table: entry.table }),
      }));
      channels.set(topic, { joinRef: joinRef ?? '', claims: verified.claims, subscriptions });
      reply('ok', { postgres_changes: subscriptions });
      return send(ws, [
        joinRef,
        null,
        topic,
        'system',
        {
          channel: topic.replace(/^realtime:/, ''),
          extension: 'postgres_changes',
          message: 'Subscribed to PostgreSQL',
          status: 'ok',
        },
      ]);
    }
    const channel = channels.get(topic);
    if (event === 'access_token' && channel) {
      const verified = verifyJwt(String(payload.access_token ?? ''), options.jwtSecret);
      if ('claims' in verified) {
        channel.claims = verified.claims;
        return;
      }
      channels.delete(topic);
      send(ws, [
        joinRef,
        null,
        topic,
        'system',
        { extension: 'system', status: 'error', message: verified.refused },
      ]);
      return send(ws, [joinRef, null, topic, 'phx_close', {}]);
    }
    if (event === 'phx_leave') {
      channels.delete(topic);
      reply('ok', {});
      return send(ws, [joinRef, null, topic, 'phx_close', {}]);
    }
    reply('ok', {});
  }

  // Logical replication: a temporary pgoutput slot on the publication, read in a loop.
  const replication = new pg.Client({ connectionString: options.replicationUrl });
  await replication.connect();
  const slot = `ctxbus_realtime_${process.pid}_${randomInt(1, 2 ** 31)}`;
  await replication.query("SELECT pg_create_logical_replication_slot($1, 'pgoutput', true)", [
    slot,
  ]);
  const relations = new Map<number, Relation>();
  let commitTimestamp = new Date().toISOString();

  async function onRelation(data: Buffer) {
    const r = reader(data);
    r.byte();
    const relid = r.int32();
    const schema = r.cstring();
    const table = r.cstring();
    r.byte();
    const count = r.int16();
    const raw: { name: string; key: boolean; oid: number }[] = [];
    for (let column = 0; column < count; column += 1) {
      const flags = r.byte();
      const name = r.cstring();
      const oid = r.int32();
      r.int32();
      raw.push({ name, key: (flags & 1) === 1, oid });
    }
    const types = await replication.query<{ oid: number; typname: string; format: string }>(
      'SELECT oid::int AS oid, typname, format_type(oid, NULL) AS format FROM pg_type WHERE oid = ANY($1)',
      [raw.map((column) => column.oid)],
    );
    const byOid = new Map(types.rows.map((row) => [row.oid, row]));
    relations.set(relid, {
      schema,
      table,
      columns: raw.map((column) => ({
        name: column.name,
        key: column.key,
        typname: byOid.get(column.oid)?.typname ?? 'text',
        format: byOid.get(column.oid)?.format ?? 'text',
      })),
    });
  }

  /** Realtime's record: every value (not unchanged TOAST) as to_jsonb of its column type. */
  async function recordOf(relation: Relation, tuple: Tuple, keysOnly = false) {
    const parts: string[] = [];
    const values: (string | null)[] = [];
    relation.columns.forEach((column, index) => {
      const cell = tuple[index];
      if (!cell || cell.kind === 'unchanged' || (keysOnly && !column.key)) return;
      values.push(cell.kind === 'text' ? cell.value : null);
      parts.push(
        `${pg.escapeLiteral(column.name)}, to_jsonb($${values.length}::text::${column.format})`,
      );
    });
    const result = await replication.query<{ record: Record<string, unknown> }>(
      `SELECT jsonb_build_object(${parts.join(', ')}) AS record`,
      values,
    );
    return result.rows[0]?.record ?? {};
  }

  /** Whether `claims` (as their role) may SELECT the row with these key values. */
  async function visible(
    relation: Relation,
    key: Record<string, unknown>,
    claims: JwtClaims,
    rowCheck: boolean,
  ) {
    const where = rowCheck
      ? Object.entries(key)
          .map(([name, value]) => `"${name}" = ${pg.escapeLiteral(String(value))}`)
          .join(' AND ')
      : 'false';
    const outcome = await queryAsSupabaseRole(
      options.databaseUrl,
      String(claims.role) as 'authenticated',
      claims,
      `SELECT 1 FROM "${relation.schema}"."${relation.table}" WHERE ${where}`,
    );
    // A DELETE cannot be checked against a row that is gone: the table privilege decides.
    return 'rows' in outcome && (!rowCheck || outcome.rows.length > 0);
  }

  async function dispatch(type: ChangeMessage['data']['type'], relation: Relation, tuple: Tuple) {
    const keys = await recordOf(relation, tuple, true);
    const data: ChangeMessage['data'] = {
      schema: relation.schema,
      table: relation.table,
      commit_timestamp: commitTimestamp,
      type,
      columns: relation.columns.map((column) => ({ name: column.name, type: column.typname })),
      ...(type === 'DELETE' ? { old_record: keys } : { record: await recordOf(relation, tuple) }),
      ...(type === 'UPDATE' && { old_record: keys }),
      errors: null,
    };
    for (const [ws, channels] of sockets) {
      for (const [topic, channel] of channels) {
        const ids: number[] = [];
        for (const subscription of channel.subscriptions) {
          if (subscription.schema !== '*' && subscription.schema !== relation.schema) continue;
          if (
            subscription.table !== undefined &&
            subscription.table !== '*' &&
            subscription.table !== relation.table
          )
            continue;
          if (subscription.event !== '*' && subscription.event !== type) continue;
          ids.push(subscription.id);
        }
        if (ids.length === 0 || !(await visible(relation, keys, channel.claims, type !== 'DELETE')))
          continue;
        const payload = { ids, data };
        sent.push({ topic, payload });
        send(ws, [null, null, topic, 'postgres_changes', payload]);
      }
    }
  }

  async function onChange(data: Buffer) {
    const r = reader(data);
    const tag = String.fromCharCode(r.byte());
    if (tag === 'B') {
      r.int64();
      const micros = r.int64();
      commitTimestamp = new Date(PG_EPOCH_MS + Number(micros / 1000n)).toISOString();
      return;
    }
    if (tag === 'R') return onRelation(data);
    if (tag !== 'I' && tag !== 'U' && tag !== 'D') return;
    const relation = relations.get(r.int32());
    if (!relation) return;
    let marker = String.fromCharCode(r.byte());
    let tuple = r.tuple();
    if (tag === 'U' && marker !== 'N') {
      marker = String.fromCharCode(r.byte());
      tuple = r.tuple();
    }
    await dispatch(tag === 'I' ? 'INSERT' : tag === 'U' ? 'UPDATE' : 'DELETE', relation, tuple);
    changesRead += 1;
  }

  let closed = false;
  let polling: Promise<void> = Promise.resolve();
  const poll = async () => {
    while (!closed) {
      const changes = await replication.query<{ data: Buffer }>(
        `SELECT data FROM pg_logical_slot_get_binary_changes($1, NULL, NULL,
           'proto_version', '1', 'publication_names', $2)`,
        [slot, publication],
      );
      for (const row of changes.rows) await onChange(row.data);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  };
  polling = poll().catch((error: unknown) => {
    if (!closed) throw error;
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    joins,
    sent,
    heartbeats: () => heartbeats,
    changesRead: () => changesRead,
    setOnline(value) {
      online = value;
      if (!online) for (const ws of sockets.keys()) ws.terminate();
    },
    async close() {
      closed = true;
      await polling.catch(() => {});
      for (const ws of sockets.keys()) ws.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await replication.end();
    },
  };
}
