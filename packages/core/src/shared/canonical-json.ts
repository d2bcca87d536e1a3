// Canonical JSON without any hashing library, so the light entry can offer it.

/** JSON with object keys sorted at every level, so equal values always give equal text. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    // fromEntries defines own properties, so a key named __proto__ is kept as a key.
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, (value as Record<string, unknown>)[key]] as const)
        .filter(([, child]) => child !== undefined)
        .map(([key, child]) => [key, sortKeys(child)]),
    );
  }
  return value;
}
