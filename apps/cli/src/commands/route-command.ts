import { CtxbusError } from '@ctxbus/core/light';
import type { Command } from 'commander';
import { printJson, printLine } from '../output.js';

// `ctxbus route --explain`: the command; route.ts (the router, the YAML parser) loads when it runs.

const ROUTE_HELP = `
The task is a JSON object (a RouteRequest), or - to read it from stdin:
  requiredCapabilities  ["code_execution", ...]  (at least one)
  origin                the runtime that asks, e.g. "openclaw"
  preferences           { "prefer": [runtimes, best first], "avoid": [runtimes],
                          "allowQueue": true }  (may the task wait for an offline runtime)
  constraints           { "network": true (needs the network), "seconds": 120 (needs this long) }

Every runtime the file declares is taken as online with one worker, except those --offline.
Ties break in this order: the task's prefer list, the origin's declared target, not avoided,
online, native before sandboxed, more workers, name.

Examples:
  ctxbus route --explain '{"requiredCapabilities":["code_execution"],"origin":"openclaw"}'
  ctxbus route --explain '{"requiredCapabilities":["code_execution"],"origin":"openclaw"}' --offline claude-code
  echo '{"requiredCapabilities":["search"],"origin":"web"}' | ctxbus route --explain - --json
`;

export function registerRoute(
  program: Command,
  run: (action: () => Promise<void>) => Promise<void>,
) {
  program
    .command('route')
    .description('explain which runtime would do a task, and why (capabilities.yaml, no hub)')
    .argument(
      '[task]',
      'the task as JSON (a RouteRequest), or - for stdin (or give it to --explain)',
    )
    .option(
      '--explain [task]',
      'explain the decision for the task (JSON, or - for stdin; or the argument after the options)',
    )
    .option('--capabilities <file>', 'the capabilities file', 'capabilities.yaml')
    .option('--offline <runtimes>', 'comma-separated runtimes to take as offline', '')
    .option('--json', 'print the decision as JSON')
    .addHelpText('after', ROUTE_HELP)
    .action(
      (
        positional: string | undefined,
        options: { explain?: string | true; capabilities: string; offline: string; json?: boolean },
      ) =>
        run(async () => {
          const {
            explainLines,
            loadCapabilities,
            parseRouteRequest,
            presenceOf,
            readTask,
            routeTask,
          } = await import('./route.js');
          // `--explain '{...}'`, `--explain --offline x '{...}'` and `route '{...}'` all work.
          const given = typeof options.explain === 'string' ? options.explain : undefined;
          if (given !== undefined && positional !== undefined) {
            throw new CtxbusError(
              'validation_failed',
              'two tasks given: one to --explain and one as the argument; give one',
            );
          }
          const task = given ?? positional;
          if (task === undefined) {
            throw new CtxbusError(
              'validation_failed',
              'no task: give it as JSON (or - for stdin), e.g. ctxbus route --explain \'{"requiredCapabilities":["code_execution"],"origin":"openclaw"}\'',
            );
          }
          const request = parseRouteRequest(await readTask(task));
          const matrix = loadCapabilities(options.capabilities);
          const offline = options.offline
            .split(',')
            .map((name) => name.trim())
            .filter((name) => name !== '');
          const decision = routeTask(request, matrix, presenceOf(matrix, offline));
          if (options.json) printJson(decision);
          else for (const line of explainLines(decision, offline)) printLine(line);
        }),
    );
}
