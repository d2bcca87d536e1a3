/** How waits between retries grow: doubling from `initialMs` up to `maxMs`, some of it random. */
export interface BackoffOptions {
  /** The first wait, in ms. */
  initialMs: number;
  /** The longest wait, in ms. */
  maxMs: number;
  /**
   * The share of each wait that is random (default 0): with 0.5 a wait is between half and all
   * of its plain value, so that many clients retrying at once spread out.
   */
  jitter?: number;
}

/**
 * The wait before retry `attempt` (0 for the first): `initialMs * 2^attempt`, at most `maxMs`,
 * less a random share of it when `jitter` is set. The one backoff rule of the project.
 */
export function backoffDelay(
  attempt: number,
  options: BackoffOptions,
  random: () => number = Math.random,
): number {
  const plain = Math.min(options.maxMs, options.initialMs * 2 ** Math.min(attempt, 40));
  const jitter = options.jitter ?? 0;
  return jitter === 0 ? plain : plain * (1 - jitter) + random() * plain * jitter;
}

/** A retry loop's backoff: `next()` gives the wait before the next retry, `reset()` starts over. */
export interface Backoff {
  next(): number;
  reset(): void;
  /** Retries since the last reset. */
  readonly attempts: number;
}

export function createBackoff(options: BackoffOptions, random?: () => number): Backoff {
  let attempts = 0;
  return {
    next: () => backoffDelay(attempts++, options, random),
    reset: () => {
      attempts = 0;
    },
    get attempts() {
      return attempts;
    },
  };
}
