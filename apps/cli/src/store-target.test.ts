import { describe, expect, it } from 'vitest';
import { describeTarget, storeTarget } from './store-target.js';

describe('storeTarget', () => {
  const env = { CTXBUS_DATA: '/var/ctxbus' };

  it('defaults to the embedded store in the data directory', () => {
    expect(storeTarget({}, env)).toEqual({ kind: 'sqlite', dataDir: '/var/ctxbus' });
    expect(storeTarget({ data: '/tmp/d' }, env)).toEqual({ kind: 'sqlite', dataDir: '/tmp/d' });
  });

  it('reads a postgres URL from --store or $CTXBUS_STORE, with ?schema= taken out', () => {
    const target = storeTarget(
      { store: 'postgres://app:s3cret@db.local:6432/ctx?schema=team_a' },
      env,
    );
    expect(target).toEqual({
      kind: 'postgres',
      connectionString: 'postgres://app:s3cret@db.local:6432/ctx',
      schema: 'team_a',
      display: 'postgres://app@db.local:6432/ctx?schema=team_a',
    });
    expect(describeTarget(target)).not.toContain('s3cret');
    const fromEnv = storeTarget(
      {},
      { ...env, CTXBUS_STORE: 'postgresql://localhost/ctx?sslmode=require' },
    );
    expect(fromEnv).toMatchObject({
      kind: 'postgres',
      connectionString: 'postgresql://localhost/ctx?sslmode=require',
    });
    expect(fromEnv).not.toHaveProperty('schema');
  });

  it('lets an explicit --data win over $CTXBUS_STORE, and refuses both flags', () => {
    const withStoreEnv = { ...env, CTXBUS_STORE: 'postgres://localhost/ctx' };
    expect(storeTarget({ data: '/tmp/d' }, withStoreEnv)).toEqual({
      kind: 'sqlite',
      dataDir: '/tmp/d',
    });
    expect(() => storeTarget({ store: 'postgres://localhost/ctx', data: '/tmp/d' }, env)).toThrow(
      /not both/,
    );
  });

  it('explains a store that is not a PostgreSQL URL', () => {
    expect(() => storeTarget({ store: 'ctx.db' }, env)).toThrow(/must be a postgres:\/\/ URL/);
    expect(() => storeTarget({ store: 'mysql://localhost/db' }, env)).toThrow(/got mysql:/);
  });
});
