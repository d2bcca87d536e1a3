import type { SQLInputValue } from 'node:sqlite';
import type { TokenColumns } from '../rows/token-row.js';
import { tokenFromRow } from '../rows/token-row.js';
import type { ListTokensOptions, TokenRecord, TokenStore } from '../store.js';
import type { SqliteConnection } from './sqlite-connection.js';

// API tokens in the embedded store (times as epoch milliseconds; only hashes are stored).

interface TokenRow extends TokenColumns {
  created_at: number;
  revoked_at: number | null;
}

const rowToToken = (row: TokenRow): TokenRecord =>
  tokenFromRow(row, row.created_at, row.revoked_at);

export class SqliteTokens implements TokenStore {
  constructor(private readonly connection: SqliteConnection) {}

  async createToken(record: TokenRecord): Promise<void> {
    this.connection.assertOpen();
    this.connection
      .statement(
        'INSERT INTO tokens (id, hash, role, team_id, runtime, label, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      )
      .run(
        record.id,
        record.hash,
        record.role,
        record.teamId,
        record.runtime,
        record.label,
        Date.parse(record.createdAt),
        record.revokedAt === null ? null : Date.parse(record.revokedAt),
      );
  }

  async findTokenByHash(hash: string): Promise<TokenRecord | null> {
    this.connection.assertOpen();
    const row = this.connection.statement('SELECT * FROM tokens WHERE hash = ?').get(hash) as
      | TokenRow
      | undefined;
    return row ? rowToToken(row) : null;
  }

  async listTokens(options: ListTokensOptions = {}): Promise<TokenRecord[]> {
    this.connection.assertOpen();
    const clauses: string[] = [];
    const params: SQLInputValue[] = [];
    if (options.teamId !== undefined) {
      clauses.push('team_id = ?');
      params.push(options.teamId);
    }
    if (!options.includeRevoked) clauses.push('revoked_at IS NULL');
    const where = clauses.length > 0 ? `WHERE ${clauses.join(' AND ')}` : '';
    const rows = this.connection
      .statement(`SELECT * FROM tokens ${where} ORDER BY created_at, id`)
      .all(...params) as unknown as TokenRow[];
    return rows.map(rowToToken);
  }

  async revokeToken(id: string): Promise<TokenRecord | null> {
    this.connection.assertOpen();
    this.connection
      .statement('UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL')
      .run(this.connection.clock().getTime(), id);
    const row = this.connection.statement('SELECT * FROM tokens WHERE id = ?').get(id) as
      | TokenRow
      | undefined;
    return row ? rowToToken(row) : null;
  }
}
