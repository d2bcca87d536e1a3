import { openSqliteStore } from '@ctxbus/store';
import { describe, expect, it } from 'vitest';
import { createHub } from './create-hub.js';

describe('the OpenAPI document', () => {
  it('has one operation per route, with path parameters and bearer security', async () => {
    const store = openSqliteStore({ path: ':memory:' });
    const hub = await createHub({ store });
    const response = await hub.app.request('/api/openapi.json');
    expect(response.status).toBe(401);
    const document = (await import('./openapi-document.js')).buildOpenApiDocument(hub.routes, {
      version: '1.2.3',
      maxBodyBytes: 1000,
    }) as {
      paths: Record<
        string,
        Record<
          string,
          { operationId: string; security: unknown[]; parameters: { name: string; in: string }[] }
        >
      >;
      info: { description: string };
    };
    const operations = Object.values(document.paths).flatMap((methods) => Object.values(methods));
    expect(operations).toHaveLength(hub.routes.length);
    const get = document.paths['/api/context/{id}']?.get;
    expect(get?.parameters).toContainEqual(expect.objectContaining({ name: 'id', in: 'path' }));
    expect(document.paths['/health']?.get?.security).toEqual([]);
    expect(document.paths['/api/context']?.get?.security).toEqual([{ bearer: [] }]);
    const listParameters = document.paths['/api/context']?.get?.parameters.map(
      (parameter) => parameter.name,
    );
    expect(listParameters).toEqual(
      expect.arrayContaining(['scope', 'type', 'tags', 'since', 'limit', 'before']),
    );
    expect(document.info.description).toContain('1000 bytes');
    expect(document.paths['/api/capabilities']?.get?.operationId).toBe('getCapabilities');
    expect(document.paths['/api/presence']?.post?.operationId).toBe('announcePresence');
    expect(document.paths['/api/presence/{instanceId}']?.delete?.parameters).toContainEqual(
      expect.objectContaining({ name: 'instanceId', in: 'path' }),
    );
    expect(document.paths['/api/tasks/{id}/update']?.post?.operationId).toBe('updateTask');
    expect(
      document.paths['/api/tasks']?.get?.parameters.map((parameter) => parameter.name),
    ).toEqual(expect.arrayContaining(['state', 'order', 'after']));
    await hub.close();
    await store.close();
  });
});
