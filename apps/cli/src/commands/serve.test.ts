import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { capabilitiesFile } from './serve.js';

describe('capabilitiesFile', () => {
  const sqlite = { kind: 'sqlite', dataDir: '/var/ctxbus' } as const;
  const postgres = {
    kind: 'postgres',
    connectionString: 'postgres://db/ctx',
    display: 'postgres://db/ctx',
  } as const;

  it('--capabilities wins over $CTXBUS_CAPABILITIES; both must exist (not optional)', () => {
    const env = { CTXBUS_CAPABILITIES: '/etc/ctxbus/env.yaml' };
    expect(capabilitiesFile('team.yaml', sqlite, env)).toEqual({
      file: resolve('team.yaml'),
      optional: false,
    });
    expect(capabilitiesFile(undefined, postgres, env)).toEqual({
      file: '/etc/ctxbus/env.yaml',
      optional: false,
    });
  });

  it("defaults to the data directory's capabilities.yaml, optional; PostgreSQL has none", () => {
    expect(capabilitiesFile(undefined, sqlite, { CTXBUS_CAPABILITIES: '' })).toEqual({
      file: '/var/ctxbus/capabilities.yaml',
      optional: true,
    });
    expect(capabilitiesFile(undefined, postgres, {})).toBeNull();
  });
});
