import type { ContextType } from '@ctxbus/core/contract';
import { CONTEXT_TYPES, CtxbusError } from '@ctxbus/core/light';

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90d`, `12h`, `30m`, `45s`, `500ms` -> milliseconds. */
export function parseDuration(text: string, flag: string): number {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim());
  if (!match?.[1] || !match[2]) {
    throw new CtxbusError(
      'validation_failed',
      `${flag}: "${text}" is not a duration (like 30d, 12h, 15m, 30s, 500ms)`,
    );
  }
  return Number(match[1]) * (UNITS[match[2]] ?? 1);
}

/**
 * `--retain status=30d,alert=30d,discovery=90d,request=90d,decision=180d` -> age limits by type
 * (`off` or empty: none). A decision's limit applies only once it is superseded.
 */
export function parseRetention(spec: string): Partial<Record<ContextType, number>> {
  const limits: Partial<Record<ContextType, number>> = {};
  if (spec.trim() === '' || spec.trim() === 'off') return limits;
  for (const part of spec.split(',')) {
    const [type, age] = part.split('=').map((piece) => piece.trim());
    if (!type || !age || !(CONTEXT_TYPES as readonly string[]).includes(type)) {
      throw new CtxbusError(
        'validation_failed',
        `--retain: "${part}" should be <type>=<age> with type one of ${CONTEXT_TYPES.join(', ')}`,
      );
    }
    limits[type as ContextType] = parseDuration(age, `--retain ${type}`);
  }
  return limits;
}
