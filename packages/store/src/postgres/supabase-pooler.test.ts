import { describe, expect, it } from 'vitest';
import { transactionPoolerWarning } from './supabase-pooler.js';

describe('transactionPoolerWarning', () => {
  it("warns for Supabase's transaction-mode port, from the URL or the options", () => {
    for (const config of [
      {
        connectionString:
          'postgres://postgres.abcd:secret@aws-0-eu-west-1.pooler.supabase.com:6543/postgres',
      },
      { host: 'localhost', port: 6543 },
    ]) {
      const warning = transactionPoolerWarning(config);
      expect(warning).toContain('LISTEN does not work');
      expect(warning).toContain('session-mode (port 5432) or direct connection string');
      expect(warning).not.toContain('secret');
    }
  });

  it('stays quiet for session mode, direct connections and unparsable strings', () => {
    for (const config of [
      {
        connectionString:
          'postgres://postgres.abcd@aws-0-eu-west-1.pooler.supabase.com:5432/postgres',
      },
      { connectionString: 'postgres://postgres@db.abcd.supabase.co/postgres' },
      { connectionString: 'host=localhost port=6543' },
      {},
    ]) {
      expect(transactionPoolerWarning(config), JSON.stringify(config)).toBeNull();
    }
  });
});
