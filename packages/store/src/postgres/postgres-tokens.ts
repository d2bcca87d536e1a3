import type { TokenColumns } from '../rows/token-row.js';
import { tokenFromRow } from '../rows/token-row.js';
import type { ListTokensOptions, TokenRecord, TokenStore } from '../store.js';
import type { PostgresContext } from './postgres-connection.js';
import { SqlParams } from './postgres-sql.js';

// API tokens in PostgreSQL (only hashes are stored).

interface TokenRow extends TokenColumns {
  created_ms: number;
  revoked_ms: number | null;
}

const TOKEN_COLUMNS = `id, hash, role, team_id, runtime, label,
  (extract(epoch FROM created_at) * 1000)::int8 AS created_ms,
  (extract(epoch FROM revoked_at) * 1000)::int8 AS revoked_ms`;

const rowToToken = (row: TokenRow): TokenRecord =>
  tokenFromRow(row, row.created_ms, row.revoked_ms);

export class PostgresTokens implements TokenStore {
  constructor(private readonly context: PostgresContext) {}

  async createToken(record: TokenRecord): Promise<void> {
    this.context.assertOpen();
    await this.context.query(
      'create a token',
      `INSERT INTO ${this.context.s}.tokens (id, hash, role, team_id, runtime, label, created_at, revoked_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7::timestamptz, $8::timestamptz)`,
      [
        record.id,
        record.hash,
        record.role,
        record.teamId,
        record.runtime,
        record.label,
        new Date(record.createdAt).toISOString(),
        record.revokedAt === null ? null : new Date(record.revokedAt).toISOString(),
      ],
    );
  }

  async findTokenByHash(hash: string): Promise<TokenRecord | null> {
    this.context.assertOpen();
    const rows = await this.context.query<TokenRow>(
      'find a token',
      `SELECT ${TOKEN_COLUMNS} FROM ${this.context.s}.tokens WHERE hash = $1`,
      [hash],
    );
    return rows[0] ? rowToToken(rows[0]) : null;
  }

  async listTokens(options: ListTokensOptions = {}): Promise<TokenRecord[]> {
    this.context.assertOpen();
    const p = new SqlParams();
    const clauses: string[] = [];
    if (options.teamId !== undefined) clauses.push(`team_id = ${p.add(options.teamId)}`);
    if (!options.includeRevoked) clauses.push('revoked_at IS NULL');
    const where = clauses.length > 0 ? `WHERE ${clauses.join(' AND ')}` : '';
    const rows = await this.context.query<TokenRow>(
      'list tokens',
      `SELECT ${TOKEN_COLUMNS} FROM ${this.context.s}.tokens ${where} ORDER BY created_at, id`,
      p.values,
    );
    return rows.map(rowToToken);
  }

  async revokeToken(id: string): Promise<TokenRecord | null> {
    this.context.assertOpen();
    await this.context.query(
      'revoke a token',
      `UPDATE ${this.context.s}.tokens SET revoked_at = $2::timestamptz WHERE id = $1 AND revoked_at IS NULL`,
      [id, this.context.clock().toISOString()],
    );
    const rows = await this.context.query<TokenRow>(
      'revoke a token',
      `SELECT ${TOKEN_COLUMNS} FROM ${this.context.s}.tokens WHERE id = $1`,
      [id],
    );
    return rows[0] ? rowToToken(rows[0]) : null;
  }
}
