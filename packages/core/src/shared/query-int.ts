import { z } from 'zod';

/**
 * An integer query parameter, from `min` to `max`: digits only, as `since` (no sign, hex,
 * exponent, decimal point or spaces, which `Number()` would take: `0x10` is not 16). A number
 * is taken as well, for callers that build the query from typed values.
 */
export function queryInt(min: number, max: number = Number.MAX_SAFE_INTEGER) {
  return z
    .union([z.int().min(min).max(max), z.string().regex(/^\d+$/, 'digits only')])
    .pipe(z.coerce.number<string | number>().int().min(min).max(max));
}
