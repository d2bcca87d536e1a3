// The host's entry helper (see openclaw-sdk.ts): resolved at run time from the OpenClaw that
// loads the plugin, never bundled.
declare module 'openclaw/plugin-sdk/plugin-entry' {
  export function definePluginEntry<Entry extends import('./openclaw-sdk.js').PluginEntry>(
    entry: Entry,
  ): Entry;
}
