import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import type { Server as HttpServer } from 'node:http';
import { createServer as createHttpServer } from 'node:http';
import type { Server, Socket } from 'node:net';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { call, runtimeToken } from './http.ts';
import type { HubProcess } from './hub-process.ts';

// The adapter conformance suite (AGENTS.md, the fourth-runtime checklist, step 4): what every
// runtime adapter must do, written once. An adapter's test calls `runAdapterConformance` with a
// driver that plays its runtime's events (a session start, a turn, the turn's end) through the
// adapter's real code, against a real hub over HTTP, and reports what the runtime would put
// before the model (the injection) and show the user or log (the notices).

/** A running hub the suite writes to and the adapter reads from. */
export interface ConformanceHub {
  readonly url: string;
  /** A runtime token of the hub's team for `runtime` (minted once per call). */
  token(runtime: string): Promise<string>;
}

export interface AdapterSessionOptions {
  /** Where the adapter finds its hub (a dead, hung or refusing one in the fail-open cases). */
  url: string;
  token: string;
  /** The adapter's state directory (its session state, its outbox): kept across sessions. */
  stateDir: string;
  /** The runtime's session (Claude Code's session id, OpenClaw's agent and session key). */
  sessionId: string;
  /** How long the adapter waits for the hub, so a hung hub fails a case open in good time. */
  timeoutMs: number;
}

/** What one runtime event gave: the text before the model, the notices for the user or log. */
export interface AdapterTurn {
  /** Everything the adapter adds to the model's context this turn ('' for nothing). */
  injection: string;
  notices: string[];
}

/** One runtime session driven through the adapter, as the runtime would call it. */
export interface AdapterSession {
  /** The session's start (its first turn where the runtime has no start event). */
  start(): Promise<AdapterTurn>;
  /** A user prompt: the context the turn starts with. */
  turn(prompt: string): Promise<AdapterTurn>;
  /** The turn's end with the model's final reply (decisions, status, through the outbox). */
  end(reply: string): Promise<AdapterTurn>;
}

export interface AdapterDriver {
  /** The runtime's name on the bus (its tokens' runtime). */
  runtime: string;
  /** The most one injection may take, in the unit `size` measures (characters, tokens). */
  cap: number;
  size(injection: string): number;
  /** Opens a session of the adapter; a second open with the same options continues it. */
  open(options: AdapterSessionOptions): AdapterSession;
}

export interface AdapterConformanceOptions {
  /** Names the describe block. */
  name: string;
  /** The hub, read once the caller's beforeAll has started it. */
  hub: () => ConformanceHub;
  driver: AdapterDriver;
  /** The adapter's hub timeout in the fail-open cases (default 1,000 ms). */
  timeoutMs?: number;
}

/** A `useHubProcess` fixture (a real `ctxbus serve`) as the suite's hub, team `acme`. */
export function processHub(hub: Pick<HubProcess, 'url' | 'adminToken'>): ConformanceHub {
  return {
    get url() {
      return hub.url;
    },
    token: (runtime) => runtimeToken(hub as HubProcess, 'acme', runtime),
  };
}

/** A port that accepts connections and never answers: a hung hub. */
async function hungServer(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A hub that answers every request with `status` (a failing server at the network boundary). */
async function refusingServer(status: number): Promise<{ url: string; close(): Promise<void> }> {
  const server: HttpServer = createHttpServer((_request, response) => {
    response.writeHead(status, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ error: { code: 'internal', message: 'the hub broke' } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A URL where nothing listens: a port the OS handed out and that was closed again. */
async function deadUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

/** Every file under `dir`, with its text and permission bits. */
function filesUnder(dir: string): { path: string; text: string; mode: number }[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((name) => join(dir, name))
    .filter((path) => statSync(path).isFile())
    .map((path) => ({
      path,
      text: readFileSync(path, 'utf8'),
      mode: statSync(path).mode & 0o777,
    }));
}

/** Another runtime than the adapter's, to write what the adapter should (or must not) see. */
function otherRuntime(runtime: string): string {
  return ['web', 'openclaw', 'claude-code'].find((name) => name !== runtime) as string;
}

interface ItemToWrite {
  type: string;
  title: string;
  content?: string;
  summary?: string;
  urgency?: string;
  visibility?: 'team' | 'private';
}

/**
 * The adapter's hub timeout with the suite's own (healthy) hub: far from any machine's speed,
 * and the longest every adapter accepts (OpenClaw's plugin config allows up to 10 s).
 */
const HEALTHY_HUB_TIMEOUT_MS = 10_000;

/**
 * The cases every adapter passes, in a describe block named after the adapter: it fails open
 * with the hub down, hung or refusing; stays within its runtime's cap; sends a write that
 * waited in the outbox exactly once; gives one notice per outage; never injects another
 * runtime's private items; and injects the same bytes each turn while the bus is unchanged
 * (the prompt cache stays warm).
 */
export function runAdapterConformance(options: AdapterConformanceOptions): void {
  const { driver } = options;
  const timeoutMs = options.timeoutMs ?? 1_000;

  describe(`adapter conformance: ${options.name}`, () => {
    let token = '';
    let writerToken = '';
    let stateDir = '';
    let sessions = 0;
    const hub = () => options.hub();

    beforeAll(async () => {
      token = await hub().token(driver.runtime);
      writerToken = await hub().token(otherRuntime(driver.runtime));
    });
    beforeEach(() => {
      stateDir = mkdtempSync(join(tmpdir(), 'ctxbus-adapter-conformance-'));
    });
    afterEach(() => rmSync(stateDir, { recursive: true, force: true }));

    /** A new session id for each case, so cases never share a session's state. */
    const sessionId = () => `conformance-${process.pid}-${++sessions}`;
    // The adapter gives up on a hub after `timeoutMs` (short, so a hung hub fails a case open
    // quickly); with the suite's own hub it waits HEALTHY_HUB_TIMEOUT_MS: a crowded bus on a
    // loaded machine took over a second, and the adapter, failing open, injected nothing.
    const open = (id: string, url = hub().url, as = token) =>
      driver.open({
        url,
        token: as,
        stateDir,
        sessionId: id,
        timeoutMs: url === hub().url ? HEALTHY_HUB_TIMEOUT_MS : timeoutMs,
      });
    const write = async (...items: ItemToWrite[]) => {
      const response = await call(hub().url, 'POST', '/api/context', {
        token: writerToken,
        body: { items },
      });
      expect(response.status, JSON.stringify(response.body)).toBeLessThan(300);
    };
    const titled = async (title: string): Promise<number> => {
      const response = await call(hub().url, 'GET', '/api/context?limit=500', { token });
      expect(response.status).toBe(200);
      return (response.body.items as { title: string }[]).filter((item) => item.title === title)
        .length;
    };
    const marker = (what: string) => `${what} ${sessions}-${Math.random().toString(36).slice(2)}`;

    /** Start, two turns and an end against `url`: nothing throws, no hub text, one notice. */
    const failsOpen = async (url: string, as = token) => {
      const secret = marker('Visible only when the hub answers');
      await write({ type: 'decision', title: secret });
      const session = open(sessionId(), url, as);
      const turns = [await session.start(), await session.turn('first'), await session.turn('x')];
      turns.push(await session.end('Done.\nDecision: keep going without the hub'));
      for (const turn of turns) expect(turn.injection).not.toContain(secret);
      expect(turns.flatMap((turn) => turn.notices)).toHaveLength(1);
    };

    it('fails open with the hub down: no context, one notice, the session goes on', async () => {
      await failsOpen(await deadUrl());
    });

    it('fails open with the hub hung (it accepts the connection and never answers)', async () => {
      const hung = await hungServer();
      try {
        await failsOpen(hung.url);
      } finally {
        await hung.close();
      }
    });

    it('fails open with the hub refusing: 401 for a token it does not know', async () => {
      await failsOpen(hub().url, 'ctxbus_not_a_token');
    });

    it('fails open with the hub refusing: 500 on every request', async () => {
      const refusing = await refusingServer(500);
      try {
        await failsOpen(refusing.url);
      } finally {
        await refusing.close();
      }
    });

    it("stays within the runtime's cap on a crowded bus", async () => {
      const long = 'a long paragraph of reasoning about the architecture '.repeat(40);
      const crowd = (from: number) =>
        Array.from({ length: 40 }, (_, index) => ({
          type: 'decision',
          title: `Decision ${from + index} with a long title that takes room in the context`,
          summary: long.slice(0, 400),
          content: long,
        }));
      await write(...crowd(0));
      const session = open(sessionId());
      const start = await session.start();
      expect(start.injection).toContain('with a long title');
      expect(driver.size(start.injection)).toBeLessThanOrEqual(driver.cap);
      await session.end('Reading.');
      await write(...crowd(40));
      const turn = await session.turn('what changed?');
      expect(turn.injection).toContain('with a long title');
      expect(driver.size(turn.injection)).toBeLessThanOrEqual(driver.cap);
    });

    it('sends a write that waited in the outbox exactly once when the hub is back', async () => {
      const id = sessionId();
      const decision = marker('Ship the offline fix');
      const down = open(id, await deadUrl());
      await down.start();
      await down.turn('fix it');
      await down.end(`Fixed.\nDecision: ${decision}`);
      expect(await titled(decision)).toBe(0);
      const up = open(id);
      await up.turn('and now?');
      await up.end('Back online.');
      await up.turn('anything else?');
      await up.end(`Still fine.\nDecision: ${decision}`);
      expect(await titled(decision)).toBe(1);
    });

    it('gives one notice per outage, again after the hub came back and went away', async () => {
      const id = sessionId();
      const dead = await deadUrl();
      const notices = async (session: AdapterSession, count: number) => {
        const found: string[] = [];
        for (let turn = 0; turn < count; turn += 1)
          found.push(...(await session.turn(`turn ${turn}`)).notices);
        return found;
      };
      const down = open(id, dead);
      const first = [...(await down.start()).notices, ...(await notices(down, 2))];
      expect(first).toHaveLength(1);
      expect(await notices(open(id), 2)).toEqual([]);
      expect(await notices(open(id, dead), 3)).toHaveLength(1);
    });

    it("never injects another runtime's private items", async () => {
      const [shared, hidden] = [marker('Team item'), marker('Private item')];
      await write(
        { type: 'decision', title: shared },
        { type: 'decision', title: hidden, visibility: 'private' },
      );
      const session = open(sessionId());
      const start = await session.start();
      await session.end('Looked.');
      const [later, laterHidden] = [marker('Later team item'), marker('Later private item')];
      await write(
        { type: 'discovery', title: later },
        { type: 'discovery', title: laterHidden, visibility: 'private' },
      );
      const turn = await session.turn('news?');
      const seen = `${start.injection}\n${turn.injection}`;
      expect(seen).toContain(shared);
      expect(seen).toContain(later);
      expect(seen).not.toContain(hidden);
      expect(seen).not.toContain(laterHidden);
    });

    it('reports the changes a turn injected to the analytics, once (POST /api/analytics/injections)', async () => {
      const session = open(sessionId());
      await session.start();
      await session.end('Looked.');
      const news = marker('Injected news');
      const written = await call(hub().url, 'POST', '/api/context', {
        token: writerToken,
        body: { type: 'discovery', title: news },
      });
      expect(written.status, JSON.stringify(written.body)).toBe(201);
      const id = written.body.items[0].id as string;
      const injected = async () => {
        const path = `/api/analytics?runtime=${driver.runtime}&limit=100`;
        const response = await call(hub().url, 'GET', path, { token });
        expect(response.status, JSON.stringify(response.body)).toBe(200);
        const rows = response.body.topItems as { item: { id: string }; injected: number }[];
        return rows.find((row) => row.item.id === id)?.injected ?? 0;
      };
      expect((await session.turn('news?')).injection).toContain(news);
      await session.end('Seen.');
      // One turn put it before the model once: in the bundle the hub served (counted then), or
      // among the changes the adapter read itself (reported after the turn), not both.
      expect(await injected()).toBe(1);
    });

    it('hub down after a good turn: the next injection carries the cached bundle, marked stale, and the local state', async () => {
      const team = marker('Cached team decision');
      await write({ type: 'decision', title: team });
      const id = sessionId();
      const up = open(id);
      await up.start();
      await up.turn('first');
      await up.end('Worked on it.');
      const hung = await hungServer();
      try {
        for (const url of [await deadUrl(), hung.url]) {
          const down = open(id, url);
          const turn = await down.turn('still there?');
          expect(turn.injection).toContain(team);
          expect(turn.injection).toMatch(/shared context from .+ ago; the hub is unreachable/);
          // The session's local state rides along: how its last turn ended.
          expect(turn.injection).toContain('last turn completed');
          expect(turn.notices).toHaveLength(1);
          await open(id).turn('back');
        }
        // A session that starts during the outage gets the cached bundle too.
        const fresh = await open(sessionId(), hung.url).start();
        expect(fresh.injection).toContain(team);
        expect(fresh.injection).toMatch(/the hub is unreachable/);
      } finally {
        await hung.close();
      }
    });

    it('keeps the bundle cache bounded (one bundle per runtime and team) and private (0600)', async () => {
      const long = 'a paragraph the bundle carries to fill the cache '.repeat(30);
      for (let round = 0; round < 4; round += 1) {
        await write(
          ...Array.from({ length: 20 }, (_, index) => ({
            type: 'decision',
            title: marker(`Cached decision ${round}-${index}`),
            summary: long.slice(0, 300),
            content: long,
          })),
        );
        const session = open(sessionId());
        await session.start();
        await session.turn('go');
        await session.end('Done.');
      }
      const cached = filesUnder(stateDir).filter((file) => file.text.includes('Cached decision'));
      expect(cached.length).toBeGreaterThan(0);
      const total = cached.reduce((sum, file) => sum + driver.size(file.text), 0);
      expect(total).toBeLessThanOrEqual(2 * driver.cap);
      for (const file of cached) expect(file.mode, file.path).toBe(0o600);
    });

    it("never caches another runtime's private items, nor injects them offline", async () => {
      const [shared, hidden] = [marker('Team item to cache'), marker('Private item not to cache')];
      await write(
        { type: 'decision', title: shared },
        { type: 'decision', title: hidden, visibility: 'private' },
      );
      const id = sessionId();
      const up = open(id);
      await up.start();
      await up.turn('look');
      await up.end('Looked.');
      const offline = await open(id, await deadUrl()).turn('offline');
      expect(offline.injection).toContain(shared);
      expect(offline.injection).not.toContain(hidden);
      const files = filesUnder(stateDir);
      expect(files.some((file) => file.text.includes(shared))).toBe(true);
      for (const file of files) expect(file.text, file.path).not.toContain(hidden);
    });

    it('injects the same bytes each turn while the bus is unchanged (prompt-cache stable)', async () => {
      await write({ type: 'decision', title: marker('Use PostgreSQL 16') });
      const session = open(sessionId());
      await session.start();
      await session.turn('one');
      await session.end('Noted.');
      const second = await session.turn('two');
      await session.end('Noted.');
      const third = await session.turn('three');
      await session.end('Noted.');
      expect(third.injection).toBe(second.injection);
      expect(third.notices).toEqual([]);
      // The bus changes: the next turn carries the change (so the comparison above can fail).
      const news = marker('Staging is down');
      await write({ type: 'alert', title: news, urgency: 'blocking' });
      expect((await session.turn('four')).injection).toContain(news);
    });
  });
}
