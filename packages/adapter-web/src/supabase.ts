// @ctxbus/adapter-web/supabase: the optional Supabase transport. A separate entry, so that the
// main one never loads @supabase/supabase-js (an optional peer dependency).
export type { SupabaseCacheFilter, SupabaseCacheOptions } from './supabase-cache.js';
export { connectSupabaseCache } from './supabase-cache.js';
export type { ItemRow } from './supabase-rows.js';
export { ITEM_ROW_COLUMNS, itemFromSupabaseRow, itemRowSchema } from './supabase-rows.js';
