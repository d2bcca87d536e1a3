import type { TokenRecord } from '../store.js';

// One mapping from a tokens row to the record, for every backend (which decode the times).

export interface TokenColumns {
  id: string;
  hash: string;
  role: TokenRecord['role'];
  team_id: string | null;
  runtime: string | null;
  label: string | null;
}

const iso = (ms: number): string => new Date(ms).toISOString();

export function tokenFromRow(
  row: TokenColumns,
  createdMs: number,
  revokedMs: number | null,
): TokenRecord {
  return {
    id: row.id,
    hash: row.hash,
    role: row.role,
    teamId: row.team_id,
    runtime: row.runtime,
    label: row.label,
    createdAt: iso(createdMs),
    revokedAt: revokedMs === null ? null : iso(revokedMs),
  };
}
