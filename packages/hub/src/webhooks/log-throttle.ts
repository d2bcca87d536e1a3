/**
 * Lets one log line per key through per interval and counts the ones held back, so that the
 * next line says how many there were. One team's dead endpoints failed every delivery, each
 * logged: tens of thousands of lines in minutes. Keys are bounded (past `maxKeys` it starts
 * over), so the memory is too.
 */
export class LogThrottle {
  private readonly last = new Map<string, { at: number; held: number }>();

  constructor(
    private readonly intervalMs: number,
    private readonly now: () => number,
    private readonly maxKeys = 10_000,
  ) {}

  /** Null: hold this line back. Else let it through: the lines held back since the last. */
  pass(key: string): number | null {
    const at = this.now();
    const entry = this.last.get(key);
    if (entry && at - entry.at < this.intervalMs) {
      entry.held += 1;
      return null;
    }
    if (!entry && this.last.size >= this.maxKeys) this.last.clear();
    this.last.set(key, { at, held: 0 });
    return entry?.held ?? 0;
  }
}
