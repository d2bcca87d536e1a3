import type { ContextItem, Viewer } from '@ctxbus/core';
import type { VectorHit, VectorSearchOptions } from '../store.js';
import { dotProduct } from './vector-math.js';

// The exact vector scan, in this process's memory: SQLite calling a JavaScript function per
// row, or PostgreSQL without pgvector doing arithmetic in SQL (about 200 ns per vector
// element: 0.4 s for 10,000 items of 256 dimensions), cost far more than the dot products
// themselves. Each model's vectors are loaded once, then by `vid` (the order they were saved
// in, by any process); the best candidates are checked by the store against the viewer and
// the filters, so the memory never decides what a viewer may see. Over its byte budget a
// model is not held, and the store scans in SQL instead.

/** What the memory needs from a store. */
export interface VectorSource {
  /** Vectors saved after `afterVid`, in vid order (non-empty ones only), at most `limit`. */
  loadSince(
    model: string,
    afterVid: number,
    limit: number,
  ): Promise<{ vid: number; rid: number; teamId: string; vector: Float32Array }[]>;
  /** The items among `rids` that the viewer may see and the filter keeps. */
  visible(
    viewer: Viewer,
    options: VectorSearchOptions,
    rids: readonly number[],
  ): Promise<{ rid: number; item: ContextItem }[]>;
  /** Which of `rids` still have a vector for the model (the others' items were swept). */
  stored(model: string, rids: readonly number[]): Promise<number[]>;
}

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

/** Rows per load. */
const LOAD_PAGE = 2_000;
/** Candidates checked per round, as a multiple of the limit; then 4x that, twice. */
const CANDIDATE_FACTOR = 4;
const ROUNDS = 3;

export class VectorMemory {
  private readonly models = new Map<string, ModelVectors>();
  private readonly loading = new Map<string, Promise<ModelVectors>>();

  constructor(
    private readonly source: VectorSource,
    private readonly maxBytes: number,
    /** Told once per model that goes over the budget (the store logs it). */
    private readonly onOverBudget: (model: string, bytes: number) => void = () => {},
  ) {}

  /** Bytes of vectors held (all models). */
  get bytes(): number {
    let total = 0;
    for (const model of this.models.values()) total += model.bytes;
    return total;
  }

  /**
   * The nearest items to `unit` (a unit vector), or null when the store must scan itself:
   * the model is over budget, or the filter keeps too few of the nearest candidates.
   */
  async search(
    viewer: Viewer,
    options: VectorSearchOptions,
    unit: Float32Array,
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
      const rows = await this.source.visible(
        viewer,
        options,
        candidates.map((candidate) => candidate.rid),
      );
      const byRid = new Map(rows.map((row) => [row.rid, row.item]));
      const missing: number[] = [];
      for (const { rid, score } of candidates) {
        const item = byRid.get(rid);
        if (item) hits.push({ item, score });
        else missing.push(rid);
      }
      if (missing.length > 0) await this.forgetSwept(options.model, model, viewer.teamId, missing);
      if (hits.length >= options.limit) return hits.slice(0, options.limit);
      size *= CANDIDATE_FACTOR;
    }
    // Every vector was checked, or the filter keeps too few of the nearest: the store scans.
    return from >= scored.length ? hits : null;
  }

  /** Drops the candidates whose vectors are gone (their items were swept, by any process). */
  private async forgetSwept(
    name: string,
    model: ModelVectors,
    teamId: string,
    rids: readonly number[],
  ): Promise<void> {
    const alive = new Set(await this.source.stored(name, rids));
    const swept = new Set(rids.filter((rid) => !alive.has(rid)));
    const team = model.teams.get(teamId);
    if (swept.size === 0 || !team) return;
    const next: TeamVectors = { rids: [], vectors: [] };
    for (let index = 0; index < team.rids.length; index++) {
      const rid = team.rids[index] as number;
      const vector = team.vectors[index] as Float32Array;
      if (swept.has(rid)) {
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
      const rows = await this.source.loadSince(name, model.lastVid, LOAD_PAGE);
      for (const row of rows) {
        let team = model.teams.get(row.teamId);
        if (!team) {
          team = { rids: [], vectors: [] };
          model.teams.set(row.teamId, team);
        }
        team.rids.push(row.rid);
        team.vectors.push(row.vector);
        model.bytes += row.vector.byteLength;
        model.lastVid = row.vid;
      }
      if (model.bytes > this.maxBytes) {
        // Not held: release what was loaded; the store's own scan serves this model from now.
        this.onOverBudget(name, model.bytes);
        model.overBudget = true;
        model.teams.clear();
        model.bytes = 0;
        return model;
      }
      if (rows.length < LOAD_PAGE) return model;
    }
  }
}
