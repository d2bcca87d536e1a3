import { z } from 'zod';
import type { RouteDefinition } from './route-definition.js';

type JsonSchema = Record<string, unknown>;

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, {
    io,
    target: 'draft-2020-12',
    unrepresentable: 'any',
  }) as JsonSchema;
  return rest;
}

const ERROR_RESPONSES: Record<number, string> = {
  400: 'Bad JSON or a schema violation; `error.message` names the field.',
  401: 'Missing, unknown or revoked token.',
  403: 'The token may not use this route.',
  404: 'No such item (or not visible to the caller).',
  409: 'Conflict: the id exists with other content, or the item was already superseded.',
  413: 'Body larger than the limit.',
  415: 'Body is not application/json.',
  422: 'A referenced item or runtime does not exist.',
};

function errorCodesFor(route: RouteDefinition): number[] {
  const codes = [400];
  if (route.auth !== 'public') codes.push(401, 403);
  if (route.params) codes.push(404);
  if (route.body) codes.push(409, 413, 415, 422);
  if (route.operationId === 'sharedContext') codes.push(422);
  return [...new Set(codes)].sort();
}

function parameters(route: RouteDefinition): unknown[] {
  const list: unknown[] = [];
  for (const [where, schema] of [
    ['path', route.params],
    ['query', route.query],
  ] as const) {
    if (!schema) continue;
    const json = jsonSchema(schema, 'input');
    const properties = (json.properties ?? {}) as Record<string, JsonSchema>;
    const required = new Set((json.required ?? []) as string[]);
    for (const [name, property] of Object.entries(properties)) {
      const { description, ...rest } = property;
      list.push({
        name,
        in: where,
        required: where === 'path' || required.has(name),
        ...(description ? { description } : {}),
        schema: rest,
      });
    }
  }
  for (const header of route.headers ?? []) {
    list.push({
      name: header.name,
      in: 'header',
      required: false,
      description: header.description,
      schema: { type: 'string' },
    });
  }
  return list;
}

/** The OpenAPI 3.1 document, generated from the route table. */
export function buildOpenApiDocument(
  routes: readonly RouteDefinition[],
  info: { version: string; maxBodyBytes: number },
): JsonSchema {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const path = route.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    const responses: Record<string, unknown> = {};
    for (const [status, description] of Object.entries(route.statuses)) {
      const schema = route.responses[Number(status)];
      responses[status] = {
        description,
        ...(schema && {
          content: {
            [route.contentType ?? 'application/json']: { schema: jsonSchema(schema, 'output') },
          },
        }),
      };
    }
    for (const status of errorCodesFor(route)) {
      responses[String(status)] ??= {
        description: ERROR_RESPONSES[status],
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      };
    }
    paths[path] ??= {};
    paths[path][route.method.toLowerCase()] = {
      operationId: route.operationId,
      summary: route.summary,
      ...(route.description && { description: route.description }),
      tags: route.tags,
      security: route.auth === 'public' ? [] : [{ bearer: [] }],
      parameters: parameters(route),
      ...(route.body && {
        requestBody: {
          required: true,
          content: { 'application/json': { schema: jsonSchema(route.body, 'input') } },
        },
      }),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'ctxbus hub',
      version: info.version,
      description: `One shared, structured, real-time context for AI agent runtimes. Every /api request needs \`Authorization: Bearer <token>\`. Request bodies are limited to ${info.maxBodyBytes} bytes. Errors are JSON: \`{"error": {"code", "message", "details"}}\`.`,
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: {
        Error: {
          type: 'object',
          required: ['error'],
          properties: {
            error: {
              type: 'object',
              required: ['code', 'message'],
              properties: { code: { type: 'string' }, message: { type: 'string' }, details: {} },
            },
          },
        },
      },
    },
    paths,
  };
}
