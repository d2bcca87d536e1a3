/**
 * Waits until `check` holds, asking again every `intervalMs`, or fails naming `what` after
 * `timeoutMs`. For conditions that nothing announces (a hub's counters, a file); where an
 * event announces the change, wait for the event instead.
 */
export async function waitUntil(
  check: () => boolean | Promise<boolean>,
  what: string,
  { timeoutMs = 10_000, intervalMs = 25 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
