import { readFileSync } from 'node:fs';
import type { CapabilitiesFile } from '@ctxbus/core';
import {
  CtxbusError,
  capabilitiesJsonSchema,
  capabilityMode,
  capabilityNames,
  parseCapabilities,
} from '@ctxbus/core';
import type { Command } from 'commander';
import { printJson, printLine } from '../output.js';

// `ctxbus capabilities check|show [FILE]`: validate capabilities.yaml and print its matrix;
// `ctxbus capabilities schema`: its JSON Schema, for editors.

/** Reads and parses a capabilities file; errors are one line naming FILE:LINE:COL (exit 2). */
export function loadCapabilities(file: string): CapabilitiesFile {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new CtxbusError('validation_failed', `cannot read ${file}: ${(error as Error).message}`);
  }
  return parseCapabilities(text, file);
}

/** The matrix as a table: a row per capability, a column per runtime, each cell its mode. */
export function matrixTable(matrix: CapabilitiesFile): string[] {
  const runtimes = Object.keys(matrix.runtimes);
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
  const widths =
    rows[0]?.map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0))) ?? [];
  return rows.map((row) =>
    row
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join('  ')
      .trimEnd(),
  );
}

export function registerCapabilities(
  program: Command,
  run: (action: () => Promise<void>) => Promise<void>,
) {
  const capabilities = program
    .command('capabilities')
    .description('what each runtime can do, and how (capabilities.yaml)');
  capabilities
    .command('check')
    .description('validate a capabilities file; errors name the line and column')
    .argument('[file]', 'the file', 'capabilities.yaml')
    .action((file: string) =>
      run(async () => {
        const matrix = loadCapabilities(file);
        const runtimes = Object.keys(matrix.runtimes).length;
        printLine(
          `${file}: ok, ${runtimes} runtime${runtimes === 1 ? '' : 's'}, ${capabilityNames(matrix).length} capabilities`,
        );
      }),
    );
  capabilities
    .command('show')
    .description('print the capability matrix (a row per capability, a column per runtime)')
    .argument('[file]', 'the file', 'capabilities.yaml')
    .option('--json', 'print the parsed file as JSON')
    .action((file: string, options: { json?: boolean }) =>
      run(async () => {
        const matrix = loadCapabilities(file);
        if (options.json) printJson(matrix);
        else for (const line of matrixTable(matrix)) printLine(line);
      }),
    );
  capabilities
    .command('schema')
    .description('print the JSON Schema of capabilities.yaml (for editors)')
    .addHelpText(
      'after',
      `
The repository commits it as schemas/capabilities.schema.json; a capabilities.yaml whose first
line is
  # yaml-language-server: $schema=./schemas/capabilities.schema.json
is checked and completed as you type (VS Code's YAML extension, any yaml-language-server).

Example:
  ctxbus capabilities schema > schemas/capabilities.schema.json`,
    )
    .action(() =>
      run(async () => {
        printJson(capabilitiesJsonSchema());
      }),
    );
}
