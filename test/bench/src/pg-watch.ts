// Watches one database's backends during a run: their CPU (from /proc, the server being on this
// machine) and, every ~50 ms, pg_stat_activity's lock waits, grouped by the first 60
// characters of the waiting query.
import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';
import type { ProcessCpu } from './proc-cpu.ts';
import { processCpu, readAll } from './proc-cpu.ts';

const SAMPLE_MS = 50;

export interface PgWatchResult {
  /** CPU of the database's backends during the run, ms. */
  backendsMs: number;
  /** CPU of every `postgres` process of the machine during the run (other users' too), ms. */
  allPostgresMs: number;
  samples: number;
  /** Samples with a backend waiting on a lock, by the waiting query's first 60 characters. */
  lockWaits: Map<string, number>;
  /** Samples in which at least one backend waited on a lock. */
  samplesWithLockWait: number;
}

/** Pids of every process named `postgres` on this machine. */
function postgresPids(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'postgres') pids.push(+entry);
    } catch {}
  }
  return pids;
}

const sum = (readings: Iterable<ProcessCpu>) => {
  let total = 0;
  for (const cpu of readings) total += cpu.self;
  return total;
};

export class PgWatch {
  private readonly client: pg.Client;
  private readonly database: string;
  private readonly base = new Map<number, ProcessCpu>();
  private readonly last = new Map<number, ProcessCpu>();
  private readonly lockWaits = new Map<string, number>();
  private running = false;
  private samples = 0;
  private samplesWithLockWait = 0;
  private timer: NodeJS.Timeout | undefined;
  private pending: Promise<void> = Promise.resolve();
  private allBefore = new Map<number, ProcessCpu>();

  private readonly advisoryNames: Readonly<Record<string, string>>;
  /** The 64-bit key of each named advisory lock, as text. */
  private readonly advisoryKeys = new Map<string, string>();

  /**
   * `adminUrl`: a connection to another database of the server (not counted).
   * `advisoryNames`: advisory locks to name in the report, label -> the text whose
   * hashtextextended(text, 0) is the lock's key (others show as "another key").
   */
  constructor(
    adminUrl: string,
    database: string,
    advisoryNames: Readonly<Record<string, string>> = {},
  ) {
    this.client = new pg.Client({
      connectionString: adminUrl,
      application_name: 'ctxbus-bench-watch',
    });
    this.database = database;
    this.advisoryNames = advisoryNames;
  }

  async connect(): Promise<void> {
    await this.client.connect();
    for (const [label, text] of Object.entries(this.advisoryNames)) {
      const { rows } = await this.client.query<{ key: string }>(
        'SELECT hashtextextended($1, 0)::text AS key',
        [text],
      );
      if (rows[0]) this.advisoryKeys.set(rows[0].key, label);
    }
  }

  /** The query's first 60 characters, and which advisory lock it waits for. */
  private label(query: string | null, advisory: string | null): string {
    const text = (query ?? '').replace(/\s+/g, ' ').trim();
    if (advisory === null) return text;
    return `${text} [advisory lock: ${this.advisoryKeys.get(advisory) ?? 'another key'}]`;
  }

  /** The run starts: CPU is counted from here, and lock waits sampled. */
  async start(): Promise<void> {
    await this.sample();
    this.base.clear();
    for (const [pid, cpu] of this.last) this.base.set(pid, cpu);
    this.allBefore = readAll(postgresPids());
    this.running = true;
    const tick = () => {
      this.pending = this.sample().finally(() => {
        if (this.running) this.timer = setTimeout(tick, SAMPLE_MS);
      });
    };
    this.timer = setTimeout(tick, SAMPLE_MS);
  }

  async stop(): Promise<PgWatchResult> {
    this.running = false;
    clearTimeout(this.timer);
    await this.pending;
    await this.sample();
    const allAfter = readAll(postgresPids());
    let allPostgresMs = 0;
    for (const [pid, cpu] of allAfter)
      allPostgresMs += cpu.self - (this.allBefore.get(pid)?.self ?? 0);
    let backendsMs = sum(this.last.values());
    for (const [pid, cpu] of this.base) if (this.last.has(pid)) backendsMs -= cpu.self;
    return {
      backendsMs,
      allPostgresMs,
      samples: this.samples,
      lockWaits: this.lockWaits,
      samplesWithLockWait: this.samplesWithLockWait,
    };
  }

  async close(): Promise<void> {
    this.running = false;
    clearTimeout(this.timer);
    await this.pending.catch(() => {});
    await this.client.end().catch(() => {});
  }

  private async sample(): Promise<void> {
    const { rows } = await this.client.query<{
      pid: number;
      wait_event_type: string | null;
      query: string | null;
      advisory: string | null;
    }>(
      `SELECT a.pid, a.wait_event_type, left(a.query, 60) AS query,
              (SELECT ((l.classid::int8 << 32) | l.objid::int8)::text FROM pg_locks l
                WHERE l.pid = a.pid AND NOT l.granted AND l.locktype = 'advisory'
                LIMIT 1) AS advisory
         FROM pg_stat_activity a
        WHERE a.datname = $1 AND a.pid <> pg_backend_pid()`,
      [this.database],
    );
    let waiting = false;
    for (const row of rows) {
      const cpu = processCpu(row.pid);
      if (cpu) {
        // A backend first seen during the run started in it: all its CPU counts.
        if (!this.last.has(row.pid) && this.running)
          this.base.set(row.pid, { self: 0, children: 0 });
        this.last.set(row.pid, cpu);
      }
      if (this.running && row.wait_event_type === 'Lock') {
        waiting = true;
        const query = this.label(row.query, row.advisory);
        this.lockWaits.set(query, (this.lockWaits.get(query) ?? 0) + 1);
      }
    }
    if (this.running) {
      this.samples += 1;
      if (waiting) this.samplesWithLockWait += 1;
    }
  }
}
