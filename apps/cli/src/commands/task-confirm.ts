// Shared by the commands only a person at a terminal runs (`approve`, `conflicts resolve`):
// their help and their prompts.

/** Characters of the digest a person types to approve. */
export const CONFIRM_CHARS = 6;

/** Why a person's command (`ctxbus approve`, ...) will not run here, or null at a terminal. */
export function noTerminalReason(
  stdinTty: boolean,
  stdoutTty: boolean,
  command = 'ctxbus approve',
): string | null {
  if (stdinTty && stdoutTty) return null;
  const missing =
    !stdinTty && !stdoutTty
      ? 'stdin and stdout are not TTYs'
      : `${stdinTty ? 'stdout' : 'stdin'} is not a TTY`;
  return `${command} needs a person at a terminal (${missing}): run it yourself in a terminal, or answer in Telegram or the dashboard`;
}
