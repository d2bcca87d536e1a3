// Shared by `approve`'s help (task-commands.ts) and its prompt (tasks.ts).

/** Characters of the digest a person types to approve. */
export const CONFIRM_CHARS = 6;
