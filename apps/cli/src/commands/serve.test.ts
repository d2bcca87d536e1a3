import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { capabilitiesFile, corsOrigins } from './serve.js';

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

describe('corsOrigins', () => {
  it('takes exact origins from --cors-origin, else $CTXBUS_CORS_ORIGINS; none by default', () => {
    expect(corsOrigins(undefined, undefined)).toEqual([]);
    expect(
      corsOrigins(['https://app.example.com', 'http://127.0.0.1:5173'], 'https://x.dev'),
    ).toEqual(['https://app.example.com', 'http://127.0.0.1:5173']);
    expect(corsOrigins([], ' https://a.dev , https://b.dev:8443 ')).toEqual([
      'https://a.dev',
      'https://b.dev:8443',
    ]);
  });

  it('refuses a wildcard, a path, a trailing slash and other schemes, naming the value', () => {
    for (const bad of [
      '*',
      'https://app.example.com/',
      'https://app.example.com/ui',
      'ftp://x.dev',
      'app.example.com',
    ]) {
      expect(() => corsOrigins([bad], undefined)).toThrow(`(got "${bad}")`);
    }
    expect(() => corsOrigins(['*'], undefined)).toThrow('* is not allowed');
  });
});
