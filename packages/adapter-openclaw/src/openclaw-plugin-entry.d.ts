// The host's entry helper (see openclaw-sdk.ts): resolved at run time from the OpenClaw that
// loads the plugin, never bundled.
declare module 'openclaw/plugin-sdk/plugin-entry' {
  export function definePluginEntry<Entry extends import('./openclaw-sdk.js').PluginEntry>(
    entry: Entry,
  ): Entry;
}

// The host's compaction, which the ctxbus context engine delegates to (loaded on first use).
declare module 'openclaw/plugin-sdk/core' {
  export function delegateCompactionToRuntime(params: Record<string, unknown>): Promise<unknown>;
}
