import { isMap, isNode, isScalar, LineCounter, parseDocument } from 'yaml';
import { CtxbusError } from '../shared/errors.js';
import type { CapabilitiesFile } from './capabilities.js';
import { capabilitiesFileSchema } from './capabilities.js';

// capabilities.yaml text -> the matrix, with errors that name the file, line and column. Its
// own module, so that the schemas, the router and the task contract load without YAML.

function position(counter: LineCounter, offset: number): string {
  const { line, col } = counter.linePos(offset);
  return `${line}:${col}`;
}

/** Seed 000's matrix: a top-level `capabilities` map of capability -> runtime -> how. */
function isSeedLayout(json: unknown): boolean {
  if (typeof json !== 'object' || json === null || 'version' in json) return false;
  const capabilities = (json as { capabilities?: unknown }).capabilities;
  return (
    typeof capabilities === 'object' &&
    capabilities !== null &&
    !Array.isArray(capabilities) &&
    Object.values(capabilities).every(
      (runtimes) => typeof runtimes === 'object' && runtimes !== null && !Array.isArray(runtimes),
    )
  );
}

/**
 * Parses capabilities.yaml text. Errors are `validation_failed`, one line each:
 * `FILE:LINE:COL: what was expected` (the first problem; fix it and run again).
 */
export function parseCapabilities(text: string, file = 'capabilities.yaml'): CapabilitiesFile {
  const counter = new LineCounter();
  const document = parseDocument(text, { lineCounter: counter, prettyErrors: false });
  const syntax = document.errors[0];
  if (syntax) {
    throw new CtxbusError(
      'validation_failed',
      `${file}:${position(counter, syntax.pos[0])}: ${syntax.message.split('\n')[0]}`,
    );
  }
  const json: unknown = document.toJS();
  const parsed = capabilitiesFileSchema.safeParse(json);
  if (parsed.success) return parsed.data;
  if (isSeedLayout(json)) {
    throw new CtxbusError(
      'validation_failed',
      `${file}:1:1: this is seed 000's capability-first layout (capabilities: <capability>: <runtime>: ...); ctxbus reads version: 1 with runtimes first (runtimes: <runtime>: capabilities: [...]): \`ctxbus capabilities init\` writes an example`,
    );
  }
  const issue = parsed.error.issues[0];
  const path = (issue?.path ?? []).map((key) => (typeof key === 'symbol' ? String(key) : key));
  // The nearest node the file has for the issue's path (a missing key: its parent); a bad
  // key: the key itself.
  let at = 0;
  const parent = document.getIn(path.slice(0, -1), true);
  const badKey =
    issue?.code === 'invalid_key' && isMap(parent)
      ? parent.items.find((pair) => isScalar(pair.key) && pair.key.value === path.at(-1))?.key
      : undefined;
  if (isScalar(badKey) && badKey.range) at = badKey.range[0];
  else
    for (let depth = path.length; depth >= 0; depth--) {
      const node = document.getIn(path.slice(0, depth), true);
      if (isNode(node) && node.range) {
        at = node.range[0];
        break;
      }
    }
  const where = path.length > 0 ? `${path.join('.')}: ` : '';
  // A bad key says what a key must be (zod's own word is "Invalid key in record").
  const inner = issue?.code === 'invalid_key' ? issue.issues[0]?.message : undefined;
  throw new CtxbusError(
    'validation_failed',
    `${file}:${position(counter, at)}: ${where}${inner ?? issue?.message ?? 'invalid'}`,
  );
}
