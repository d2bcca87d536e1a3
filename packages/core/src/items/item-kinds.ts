// The item kinds alone, without zod: `ctxbus serve` checks --retain against them before the
// hub (and zod) load.
export const CONTEXT_TYPES = ['discovery', 'decision', 'status', 'request', 'alert'] as const;
export const SCOPES = ['task', 'thread', 'space', 'global'] as const;
export const URGENCIES = ['background', 'attention', 'blocking'] as const;
export const VISIBILITIES = ['team', 'private'] as const;
