import type { PostgresTarget } from './postgres-connection.js';

// Planner statistics that keep up with a table's growth. Autovacuum analyzes a table after a
// tenth of it changed, but it looks at each database once a minute, and until it has the
// planner guesses from the table's size alone. A prepared statement's generic plan is made on
// its sixth run, when a new table holds a handful of rows and every index looks as good as
// another, and it is kept until the table is analyzed: a task's complete, planned then, read
// the team's whole task list through tasks_team instead of its one row through the id index
// (2,500 buffers a call at 2,000 tasks, growing with each task). An ANALYZE gives the planner
// the columns' statistics (one team is not selective, an id is) and makes every connection
// plan its statements again.

export interface GrowthMaintenanceOptions {
  target: PostgresTarget;
  /** The tables, as SQL (quoted, comma separated). */
  tables: string;
  /** The size (a sequence, a row id) at which the first run is due. */
  from: number;
  closed: () => boolean;
}

/** VACUUM (ANALYZE) of some tables in the background each time a size of theirs has doubled. */
export class GrowthMaintenance {
  private next = Number.POSITIVE_INFINITY;
  private running: Promise<void> | null = null;

  constructor(private readonly options: GrowthMaintenanceOptions) {}

  /** The run in progress, if any (a closing store waits for it). */
  get pending(): Promise<void> | null {
    return this.running;
  }

  /**
   * From what the planner knows now (`estimate`, its row estimate; 0 when never analyzed): the
   * next run at twice that, `from` at the least. Runs at once when `size` is already there.
   */
  schedule(estimate: number, size: number): void {
    this.next = Math.max(this.options.from, 2 * estimate);
    this.grown(size);
  }

  /** Runs once `size` reaches the next mark (one run at a time), and sets the mark after it. */
  grown(size: number): void {
    const { target, tables, from } = this.options;
    if (size < this.next || this.running !== null || this.options.closed()) return;
    this.next = Math.max(from, size * 2);
    const started = performance.now();
    this.running = target.pool
      .query(`VACUUM (ANALYZE) ${tables}`)
      .then(
        () => {
          const ms = Math.round(performance.now() - started);
          target.logger.debug({ tables, size, ms }, 'postgres: refreshed planner statistics');
        },
        (error: unknown) => {
          target.logger.warn({ err: error, tables }, 'postgres: VACUUM ANALYZE failed');
        },
      )
      .finally(() => {
        this.running = null;
      });
  }
}
