// The two ways a test waits: for a condition it can only ask about (`waitUntil`), and for an
// event a promise announces (`waitFor`). Both fail naming what they waited for; their timeouts
// can be generous, since they cost nothing when the awaited thing happens. A test never sleeps
// in their place, and a test that checks that something did *not* happen waits for a later
// event that is ordered after it (a later item on the same stream, say) instead of a pause.

/**
 * How long a test waits for an event before it calls it lost: a guard against a hang, not a
 * speed bound (speed goals live in test/bench). Generous, since it costs nothing when the
 * event comes, so that a loaded machine (a load of 20 on 2 cores) is slow, not failing.
 * `CTXBUS_TEST_WAIT_MS` changes it for a run.
 */
export const TEST_WAIT_MS = Number(process.env.CTXBUS_TEST_WAIT_MS) || 90_000;

export interface WaitOptions {
  /** How long to wait before failing (default TEST_WAIT_MS). */
  timeoutMs?: number;
}

/**
 * Waits until `check` holds, asking again every `intervalMs`, or fails naming `what` after
 * `timeoutMs`. For conditions that nothing announces (a hub's counters, a file); where an
 * event announces the change, wait for the event instead (`waitFor`, a stream's `waitFor`).
 */
export async function waitUntil(
  check: () => boolean | Promise<boolean>,
  what: string,
  { timeoutMs = TEST_WAIT_MS, intervalMs = 25 }: WaitOptions & { intervalMs?: number } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/**
 * Waits for `promise` (an event: a process exit, a stream's end), or fails naming `what` after
 * `timeoutMs`. Resolves with its value; a rejection passes through.
 */
export async function waitFor<T>(
  promise: Promise<T>,
  what: string,
  { timeoutMs = TEST_WAIT_MS }: WaitOptions = {},
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * What a predicate waits for, for a wait's failure message when the caller gave no words: its
 * source, as in `() => stream.items().length >= 3`.
 */
export function describeCheck(predicate: (...args: never[]) => unknown): string {
  return `\`${predicate.toString().replace(/\s+/g, ' ').slice(0, 200)}\``;
}
