import { CtxbusError } from '@ctxbus/core/light';
import type { Command } from 'commander';
import { printJson, printLine } from '../output.js';
import type { ShowOptions } from './capabilities.js';

// `ctxbus capabilities init|check|show [FILE]`, `schema`: the commands; capabilities.ts loads when one runs.

export function registerCapabilities(
  program: Command,
  run: (action: () => Promise<void>) => Promise<void>,
) {
  const capabilities = program
    .command('capabilities')
    .description('what each runtime can do, and how (capabilities.yaml)');
  capabilities
    .command('init')
    .description(
      "write a capabilities file to start from: Claude Code runs code, OpenClaw hands code to it, Codex and the dashboard, who approves commands, and the worker's allow-list (edit it, then ctxbus capabilities check)",
    )
    .argument('[file]', 'where to write it', 'capabilities.yaml')
    .option('--force', 'replace a file that is already there')
    .action((file: string, options: { force?: boolean }) =>
      run(async () => {
        const { writeCapabilitiesExample } = await import('./capabilities.js');
        writeCapabilitiesExample(file, options.force === true);
        printLine(`wrote ${file}; next: ctxbus capabilities check ${file}`);
      }),
    );
  capabilities
    .command('check')
    .description('validate a capabilities file; errors name the line and column')
    .argument('[file]', 'the file', 'capabilities.yaml')
    .action((file: string) =>
      run(async () => {
        const { allowListWarnings, capabilityNames, loadCapabilities } = await import(
          './capabilities.js'
        );
        const matrix = loadCapabilities(file);
        const runtimes = Object.keys(matrix.runtimes).length;
        printLine(
          `${file}: ok, ${runtimes} runtime${runtimes === 1 ? '' : 's'}, ${capabilityNames(matrix).length} capabilities`,
        );
        for (const warning of await allowListWarnings(matrix)) {
          process.stderr.write(`${file}: warning: ${warning}\n`);
        }
      }),
    );
  capabilities
    .command('show')
    .description(
      'print the capability matrix (a row per capability, a column per runtime); --hub: the matrix a running hub loaded, with an ONLINE row from its presence',
    )
    .argument('[file]', 'the file', 'capabilities.yaml')
    .option('--hub', 'ask the hub (GET /api/capabilities) instead of reading a file')
    .option(
      '--url <url>',
      'with --hub: hub URL (default: $CTXBUS_URL, else the hub saved by ctxbus serve)',
    )
    .option(
      '--token <token>',
      'with --hub: runtime token (default: $CTXBUS_TOKEN, else the one saved by token create --save)',
    )
    .option('--json', "print the parsed file (with --hub: the hub's answer) as JSON")
    .action((file: string, options: ShowOptions, command: Command) =>
      run(async () => {
        const {
          approversLine,
          approversOf,
          fetchCapabilities,
          hubTable,
          loadCapabilities,
          matrixTable,
        } = await import('./capabilities.js');
        if (!options.hub) {
          if (options.url !== undefined || options.token !== undefined) {
            throw new CtxbusError('validation_failed', '--url and --token go with --hub');
          }
          const matrix = loadCapabilities(file);
          if (options.json) printJson(matrix);
          else
            for (const line of [...matrixTable(matrix), approversLine(approversOf(matrix))])
              printLine(line);
          return;
        }
        if (command.args.length > 0) {
          throw new CtxbusError('validation_failed', 'give a FILE or --hub, not both');
        }
        const answer = await fetchCapabilities(options);
        if (options.json) {
          printJson(answer);
          return;
        }
        for (const line of hubTable(answer)) printLine(line);
      }),
    );
  capabilities
    .command('schema')
    .description('print the JSON Schema of capabilities.yaml (for editors)')
    .addHelpText(
      'after',
      `
Saved beside capabilities.yaml, and named in the file's first line, it checks and completes
the file as you type (VS Code's YAML extension, any yaml-language-server):
  ctxbus capabilities schema > capabilities.schema.json
  # first line of capabilities.yaml:
  # yaml-language-server: $schema=./capabilities.schema.json
(The repository commits it as schemas/capabilities.schema.json.)`,
    )
    .action(() =>
      run(async () => {
        const { capabilitiesJsonSchema } = await import('./capabilities.js');
        printJson(capabilitiesJsonSchema());
      }),
    );
}
