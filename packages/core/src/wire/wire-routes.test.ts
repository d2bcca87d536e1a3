import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { CtxbusError } from '../shared/errors.js';
import { wirePath, wireQueryString, wireTarget } from './wire-request.js';
import type { WireRoute } from './wire-route.js';
import { wireRoutes } from './wire-routes.js';

const entries = Object.entries(wireRoutes) as [string, WireRoute & { operationId: string }][];

describe('the wire table', () => {
  it('names each route by its key, once per method and path', () => {
    for (const [id, route] of entries) expect(route.operationId).toBe(id);
    const places = entries.map(([, route]) => `${route.method} ${route.path}`);
    expect(new Set(places).size).toBe(places.length);
  });

  it('declares exactly the path parameters each path has', () => {
    for (const [id, route] of entries) {
      const inPath = [...route.path.matchAll(/:([A-Za-z0-9_]+)/g)].map((match) => match[1]);
      const declared = route.params ? Object.keys((route.params as z.ZodObject).shape) : [];
      expect(declared.sort(), id).toEqual(inPath.sort());
    }
  });

  it('gives every route a success answer with a schema', () => {
    for (const [id, route] of entries) {
      const statuses = Object.keys(route.responses).map(Number);
      expect(statuses.length, id).toBeGreaterThan(0);
      expect(
        statuses.every((status) => status < 300),
        id,
      ).toBe(true);
    }
  });
});

describe('building a request', () => {
  it('fills and encodes path parameters, and refuses a missing one', () => {
    expect(wirePath(wireRoutes.getTask.path, { id: 'a/b c' })).toBe('/api/tasks/a%2Fb%20c');
    expect(() => wirePath('/api/tasks/:id', {})).toThrow(CtxbusError);
    // An empty id would ask another route (GET /api/tasks/): refused before it is sent.
    expect(() => wirePath('/api/tasks/:id', { id: '' })).toThrow('id must not be empty');
  });

  it('writes lists as comma lists and leaves absent values out', () => {
    expect(
      wireQueryString({ scope: ['team', 'project'], limit: 5, since: undefined, key: null }),
    ).toBe('scope=team%2Cproject&limit=5');
    expect(wireTarget('/api/context', undefined, {})).toBe('/api/context');
    expect(wireTarget('/api/context/:id/resolved', { id: 'x' }, { runtime: 'web' })).toBe(
      '/api/context/x/resolved?runtime=web',
    );
  });

  it('writes a query the hub parses back to the same values', () => {
    const since = '2026-01-02T03:04:05+02:00';
    const query = wireQueryString({ scope: ['task', 'space'], since, limit: 7 });
    const parsed = wireRoutes.listContext.query.parse(
      Object.fromEntries(new URL(`http://hub/?${query}`).searchParams),
    );
    expect(parsed).toMatchObject({ scope: ['task', 'space'], since, limit: 7 });
  });
});
