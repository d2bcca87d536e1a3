type Schema = Record<string, unknown>;

/**
 * Rewrites `type: [X, "null"]` (what zod emits for nullable fields) into
 * `anyOf: [{type: X, ...}, {type: "null"}]`, at every depth. Both are legal JSON Schema, but
 * clients that map tool schemas onto a single-`type` dialect (Gemini's function declarations,
 * for one) reject the array form (MCP Inspector flags it as a portability warning).
 */
export function portableSchema<T>(schema: T): T {
  if (Array.isArray(schema)) return schema.map(portableSchema) as T;
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema as Schema)) out[key] = portableSchema(value);
  if (Array.isArray(out.type) && out.type.length > 1) {
    const { type, description, title, default: fallback, ...rest } = out;
    return {
      ...(description !== undefined && { description }),
      ...(title !== undefined && { title }),
      ...(fallback !== undefined && { default: fallback }),
      anyOf: (type as string[]).map((single) =>
        single === 'null' ? { type: 'null' } : { type: single, ...rest },
      ),
    } as T;
  }
  return out as T;
}
