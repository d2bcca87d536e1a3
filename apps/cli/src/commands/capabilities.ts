import { readFileSync, writeFileSync } from 'node:fs';
import type { CapabilitiesFile, CapabilitiesResponse } from '@ctxbus/core/capabilities';
import {
  agentApprovers,
  approversOf,
  capabilitiesJsonSchema,
  capabilitiesResponseSchema,
  capabilityMode,
  capabilityNames,
  parseCapabilities,
} from '@ctxbus/core/capabilities';
import { errorResponseSchema } from '@ctxbus/core/contract';
import type { ErrorCode } from '@ctxbus/core/light';
import { bearer, CtxbusError, ERROR_CODES, hubUnreachable } from '@ctxbus/core/light';
import { hubUrl, runtimeToken } from '../hub-target.js';
import { CAPABILITIES_EXAMPLE } from './capabilities-example.js';

// `ctxbus capabilities init [FILE]`: write the example to start from;
// `ctxbus capabilities check|show [FILE]`: validate capabilities.yaml and print its matrix;
// `show --hub`: the matrix a running hub loaded, with each runtime's live presence;
// `ctxbus capabilities schema`: its JSON Schema, for editors.

/** Reads and parses a capabilities file; errors are one line naming FILE:LINE:COL (exit 2). */
/** Writes the example file (CAPABILITIES_EXAMPLE); an existing file only with `force`. */
export function writeCapabilitiesExample(file: string, force: boolean): void {
  try {
    writeFileSync(file, CAPABILITIES_EXAMPLE, { flag: force ? 'w' : 'wx' });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') {
      throw new CtxbusError(
        'conflict',
        `${file} exists; kept as it is (--force replaces it, or give another path)`,
      );
    }
    throw new CtxbusError('validation_failed', `cannot write ${file}: ${(error as Error).message}`);
  }
}

export function loadCapabilities(file: string): CapabilitiesFile {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
    throw new CtxbusError(
      'validation_failed',
      missing
        ? `no capabilities file at ${file}: write one with \`ctxbus capabilities init\`, or give the path of yours`
        : `cannot read ${file}: ${(error as Error).message}`,
    );
  }
  return parseCapabilities(text, file);
}

/**
 * What the file permits beyond its words: an agent runtime among the approvers; entries ending
 * in `...` (but an interpreter's script entry) are permission to run code (the worker runs
 * what they alone allow sandboxed, or asks a human); a bad entry (the worker would refuse
 * every command).
 */
export async function allowListWarnings(matrix: CapabilitiesFile): Promise<string[]> {
  const { codeRunningEntry, parseAllowEntry } = await import('@ctxbus/exec');
  const warnings: string[] = [];
  const agents = agentApprovers(matrix);
  if (agents.length > 0) {
    warnings.push(
      `approvers: ${agents.join(', ')} ${agents.length === 1 ? 'is an agent runtime: its' : 'are agent runtimes: their'} agents could release any command a worker asks about; approvers are people's channels (cli, telegram, web)`,
    );
  }
  for (const source of matrix.remote_execution?.allow ?? []) {
    try {
      const reason = codeRunningEntry(parseAllowEntry(source));
      if (reason) {
        warnings.push(
          `remote_execution.allow: ${reason}; commands it alone allows run sandboxed (the working directory read-only), or once a human approves them`,
        );
      }
    } catch (error) {
      warnings.push((error as Error).message);
    }
  }
  return warnings;
}

/**
 * The matrix as a table: a row per capability, a column per runtime, each cell its mode.
 * With `online` (a hub's presence), a last ONLINE row: yes (workers), or no.
 */
export function matrixTable(
  matrix: CapabilitiesFile,
  online?: Record<string, { online: boolean; workers: number }>,
  extraRuntimes: readonly string[] = [],
): string[] {
  const runtimes = [...Object.keys(matrix.runtimes), ...extraRuntimes];
  const rows = [
    ['capability', ...runtimes],
    ...capabilityNames(matrix).map((name) => [
      name,
      ...runtimes.map((runtime) => {
        const mode = capabilityMode(matrix, runtime, name);
        const via = matrix.runtimes[runtime]?.capabilities[name]?.via;
        return via && mode !== 'unavailable' ? `${mode} (${via})` : mode;
      }),
    ]),
  ];
  if (online) {
    rows.push([
      'ONLINE',
      ...runtimes.map((runtime) => {
        const presence = online[runtime];
        if (!presence?.online) return 'no';
        return `yes (${presence.workers} worker${presence.workers === 1 ? '' : 's'})`;
      }),
    ]);
  }
  const widths =
    rows[0]?.map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0))) ?? [];
  return rows.map((row) =>
    row
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join('  ')
      .trimEnd(),
  );
}

/** Who approves commands, in one line. */
export function approversLine(approvers: { runtimes: string[]; source: 'file' | 'default' }) {
  const who = approvers.runtimes.length > 0 ? approvers.runtimes.join(', ') : 'none';
  return `approvers: ${who} (${approvers.source === 'default' ? 'the default: the file names none' : 'approvers in the file'}); admin tokens too; never the task's origin or executor`;
}

export interface ShowOptions {
  hub?: boolean;
  url?: string;
  token?: string;
  json?: boolean;
}

/** GET /api/capabilities from the hub a command finds by the usual rule (hub-target.ts). */
export async function fetchCapabilities(options: ShowOptions): Promise<CapabilitiesResponse> {
  const url = hubUrl(options.url);
  const authorization = bearer(runtimeToken(url, options.token));
  let response: Response;
  try {
    response = await fetch(`${url}/api/capabilities`, {
      headers: { authorization },
      signal: AbortSignal.timeout(10_000),
    });
  } catch (error) {
    throw hubUnreachable(url, error);
  }
  const body: unknown = await response.json().catch(() => null);
  if (!response.ok) {
    const parsed = errorResponseSchema.safeParse(body);
    const code =
      parsed.success && parsed.data.error.code in ERROR_CODES
        ? (parsed.data.error.code as ErrorCode)
        : response.status >= 500
          ? 'unavailable'
          : 'internal';
    throw new CtxbusError(
      code,
      parsed.success ? parsed.data.error.message : `the hub answered ${response.status}`,
    );
  }
  const parsed = capabilitiesResponseSchema.safeParse(body);
  if (!parsed.success) {
    throw new CtxbusError(
      'internal',
      `unexpected answer from ${url}/api/capabilities (an older hub?): ${parsed.error.issues[0]?.message}`,
    );
  }
  return parsed.data;
}

/** The hub's matrix with an ONLINE row, then where it came from. */
export function hubTable(answer: CapabilitiesResponse): string[] {
  const runtimes: CapabilitiesFile['runtimes'] = {};
  const online: Record<string, { online: boolean; workers: number }> = {};
  const undeclared: string[] = [];
  for (const runtime of answer.runtimes) {
    online[runtime.id] = runtime.presence;
    if (runtime.declared) {
      runtimes[runtime.id] = {
        description: runtime.description ?? '',
        trust: runtime.trust ?? 'standard',
        capabilities: runtime.capabilities,
      };
    } else undeclared.push(runtime.id);
  }
  const lines =
    answer.runtimes.length === 0
      ? ['no runtimes declared and none online']
      : matrixTable({ version: 1, runtimes }, online, undeclared);
  const source = answer.source;
  if (undeclared.length > 0) {
    lines.push(`not in the file (online only): ${undeclared.join(', ')}`);
  }
  lines.push(approversLine(answer.approvers));
  lines.push(
    source.file === null
      ? 'matrix: none (the hub has no capabilities file)'
      : source.status === 'loaded'
        ? `matrix: ${source.file}, loaded ${source.loadedAt}`
        : `matrix: empty (${source.error ? `${source.file} did not load` : `no ${source.file} yet`})`,
  );
  if (source.error) lines.push(`last edit not loaded: ${source.error.message}`);
  return lines;
}

// For the command's actions, which import this module when they run.
export { approversOf, capabilitiesJsonSchema, capabilityNames };
