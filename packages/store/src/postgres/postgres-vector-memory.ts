import type { Viewer } from '@ctxbus/core';
import type { QueryResultRow } from 'pg';
import type { VectorHit, VectorSearchOptions } from '../store.js';
import { dotProduct } from '../vectors/vector-math.js';
import type { ItemRow } from './postgres-sql.js';
import { filterSql, ITEM_COLUMNS, rowToItem, SqlParams } from './postgres-sql.js';

// The exact scan without pgvector, in this process's memory: plain SQL spends about 200 ns per
// vector element (0.4 s for 10,000 items of 256 dimensions), JavaScript about 1 ns. Each
// model's vectors are loaded once and then by `vid` (the order they were saved in, by any
// hub); the best candidates are checked in SQL against the viewer and the filters, so the
// memory never decides what a viewer may see. Over its byte budget a model is not held and
// the SQL scan runs instead.

type Query = <R extends QueryResultRow>(
  action: string,
  text: string,
  values?: unknown[],
) => Promise<R[]>;

interface TeamVectors {
  rids: number[];
  vectors: Float32Array[];
}

interface ModelVectors {
  lastVid: number;
  bytes: number;
  teams: Map<string, TeamVectors>;
  overBudget: boolean;
}

/** Rows per load query. */
const LOAD_PAGE = 2_000;
/** Candidates checked per round, as a multiple of the limit; then 4x that, twice. */
const CANDIDATE_FACTOR = 4;
const ROUNDS = 3;

export class VectorMemory {
  private readonly models = new Map<string, ModelVectors>();
  private readonly loading = new Map<string, Promise<ModelVectors>>();

  constructor(
    private readonly query: Query,
    private readonly s: string,
    private readonly maxBytes: number,
  ) {}

  /** Bytes of vectors held (all models). */
  get bytes(): number {
    let total = 0;
    for (const model of this.models.values()) total += model.bytes;
    return total;
  }

  /** The hits, or null when this model is over budget or the filter is too selective. */
  async search(
    viewer: Viewer,
    options: VectorSearchOptions,
    unit: Float32Array,
    nowMs: number,
  ): Promise<VectorHit[] | null> {
    const model = await this.refresh(options.model);
    if (model.overBudget) return null;
    const team = model.teams.get(viewer.teamId);
    if (!team) return [];
    const scored: { rid: number; score: number }[] = [];
    for (let index = 0; index < team.rids.length; index++) {
      const vector = team.vectors[index] as Float32Array;
      if (vector.length !== unit.length) continue;
      scored.push({ rid: team.rids[index] as number, score: dotProduct(vector, unit) });
    }
    scored.sort((a, b) => b.score - a.score || b.rid - a.rid);
    const hits: VectorHit[] = [];
    let from = 0;
    let size = options.limit * CANDIDATE_FACTOR;
    for (let round = 0; round < ROUNDS && from < scored.length; round++) {
      const candidates = scored.slice(from, from + size);
      from += candidates.length;
      const rows = await this.visible(viewer, options, candidates, nowMs);
      const byRid = new Map(rows.map((row) => [row.rid, row]));
      const gone: number[] = [];
      for (const { rid, score } of candidates) {
        const row = byRid.get(rid);
        if (row) hits.push({ item: rowToItem(row), score });
        else gone.push(rid);
      }
      if (gone.length > 0) await this.forgetDeleted(options.model, model, viewer.teamId, gone);
      if (hits.length >= options.limit) return hits.slice(0, options.limit);
      size *= CANDIDATE_FACTOR;
    }
    // Every vector was checked, or the filter keeps too few of the nearest: the SQL scan.
    return from >= scored.length ? hits : null;
  }

  private async visible(
    viewer: Viewer,
    options: VectorSearchOptions,
    candidates: readonly { rid: number }[],
    nowMs: number,
  ): Promise<ItemRow[]> {
    const p = new SqlParams();
    const rids = p.add(candidates.map((candidate) => candidate.rid));
    const where = filterSql(viewer, options, nowMs, p);
    return this.query<ItemRow>(
      'search vectors',
      `SELECT ${ITEM_COLUMNS} FROM ${this.s}.items i WHERE i.rid = ANY(${rids}::bigint[]) AND ${where}`,
      p.values,
    );
  }

  /** Drops from memory the candidates whose vectors are gone (their items were swept). */
  private async forgetDeleted(
    name: string,
    model: ModelVectors,
    teamId: string,
    rids: readonly number[],
  ): Promise<void> {
    const kept = await this.query<{ rid: number }>(
      'search vectors',
      `SELECT rid FROM ${this.s}.item_vectors WHERE model = $1 AND rid = ANY($2::bigint[])`,
      [name, rids],
    );
    const alive = new Set(kept.map((row) => Number(row.rid)));
    const deleted = new Set(rids.filter((rid) => !alive.has(rid)));
    if (deleted.size === 0) return;
    const team = model.teams.get(teamId);
    if (!team) return;
    const next: TeamVectors = { rids: [], vectors: [] };
    for (let index = 0; index < team.rids.length; index++) {
      const rid = team.rids[index] as number;
      const vector = team.vectors[index] as Float32Array;
      if (deleted.has(rid)) {
        model.bytes -= vector.byteLength;
        continue;
      }
      next.rids.push(rid);
      next.vectors.push(vector);
    }
    model.teams.set(teamId, next);
  }

  /** The model's vectors, with those saved since the last look (one query when none). */
  private refresh(name: string): Promise<ModelVectors> {
    const running = this.loading.get(name);
    if (running) return running;
    const load = this.load(name).finally(() => this.loading.delete(name));
    this.loading.set(name, load);
    return load;
  }

  private async load(name: string): Promise<ModelVectors> {
    let model = this.models.get(name);
    if (!model) {
      model = { lastVid: 0, bytes: 0, teams: new Map(), overBudget: false };
      this.models.set(name, model);
    }
    if (model.overBudget) return model;
    for (;;) {
      const rows = await this.query<{
        vid: number;
        rid: number;
        team_id: string;
        vector: Float32Array;
      }>(
        'load vectors',
        `SELECT v.vid, v.rid, i.team_id, v.vector
           FROM ${this.s}.item_vectors v JOIN ${this.s}.items i ON i.rid = v.rid
          WHERE v.model = $1 AND v.vid > $2 AND v.dims > 0
          ORDER BY v.vid LIMIT ${LOAD_PAGE}`,
        [name, model.lastVid],
      );
      for (const row of rows) {
        const vector = row.vector;
        let team = model.teams.get(row.team_id);
        if (!team) {
          team = { rids: [], vectors: [] };
          model.teams.set(row.team_id, team);
        }
        team.rids.push(Number(row.rid));
        team.vectors.push(vector);
        model.bytes += vector.byteLength;
        model.lastVid = Number(row.vid);
      }
      if (model.bytes > this.maxBytes) {
        // Not held: release what was loaded; the SQL scan serves this model from now on.
        model.overBudget = true;
        model.teams.clear();
        model.bytes = 0;
        return model;
      }
      if (rows.length < LOAD_PAGE) return model;
    }
  }
}
