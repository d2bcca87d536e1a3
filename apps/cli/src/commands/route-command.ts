import { readFileSync } from 'node:fs';
import type { CapabilitiesFile, RoutingDecision, RuntimePresence } from '@ctxbus/core';
import { CtxbusError, routeRequestSchema, routeTask, validationError } from '@ctxbus/core';
import type { Command } from 'commander';
import { printJson, printLine } from '../output.js';
import { loadCapabilities } from './capabilities-command.js';

// `ctxbus route --explain '<task JSON>'`: which runtime would do a task, and why, by the
// router in core (routeTask) on a capabilities file, without a hub.

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

/** Reads and validates the task: a bad JSON or a bad field is one line (exit 2). */
export function parseRouteRequest(text: string) {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new CtxbusError('bad_json', `task: not JSON: ${(error as Error).message}`);
  }
  const parsed = routeRequestSchema.safeParse(value);
  if (!parsed.success) throw validationError(parsed.error, 'task');
  return parsed.data;
}

/** Every declared runtime online with one worker, except the named ones (each must be declared). */
export function presenceOf(matrix: CapabilitiesFile, offline: readonly string[]): RuntimePresence {
  const declared = Object.keys(matrix.runtimes);
  for (const runtime of offline) {
    if (!declared.includes(runtime)) {
      throw new CtxbusError(
        'validation_failed',
        `--offline: "${runtime}" is not declared in the capabilities file (declared: ${declared.join(', ')})`,
      );
    }
  }
  return Object.fromEntries(
    declared.map((runtime) => {
      const away = offline.includes(runtime);
      return [runtime, { online: !away, workers: away ? 0 : 1 }];
    }),
  );
}

/** The decision for people: what, why, how, then every candidate and why it was kept or not. */
export function explainLines(decision: RoutingDecision): string[] {
  const origin = decision.candidates[0]?.runtime ?? '?';
  const headline =
    decision.kind === 'escalate'
      ? `escalate: no runtime can, a human must (asked by ${origin})`
      : decision.kind === 'proxy' || decision.kind === 'queue'
        ? `${decision.kind}: ${origin} -> ${decision.runtime}`
        : `${decision.kind}: ${decision.runtime} does it itself`;
  const modes = Object.entries(decision.modes).map(([name, mode]) => {
    const via = decision.via[name];
    return `${name} ${mode}${via ? ` (${via})` : ''}`;
  });
  const rows = decision.candidates.map((candidate) => [
    candidate.runtime === decision.runtime ? '*' : candidate.kept ? '+' : '-',
    candidate.runtime,
    candidate.role === 'origin' ? 'origin' : candidate.kept ? 'kept' : 'dropped',
    candidate.reason,
  ]);
  const widths = [1, 2].map((column) => Math.max(...rows.map((row) => row[column]?.length ?? 0)));
  return [
    headline,
    `  why:      ${decision.reason}`,
    ...(modes.length > 0 ? [`  how:      ${modes.join(', ')}`] : []),
    `  approval: ${decision.requiresApproval ? `required: ${decision.approvalReason}` : 'not needed'}`,
    '',
    'candidates (* chosen, + could, - could not):',
    ...rows.map(([mark, runtime, role, reason]) =>
      `  ${mark} ${(runtime ?? '').padEnd(widths[0] ?? 0)}  ${(role ?? '').padEnd(widths[1] ?? 0)}  ${reason}`.trimEnd(),
    ),
  ];
}

function readTask(argument: string): string {
  if (argument !== '-') return argument;
  try {
    return readFileSync(0, 'utf8');
  } catch (error) {
    throw new CtxbusError('validation_failed', `cannot read stdin: ${(error as Error).message}`);
  }
}

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
          const request = parseRouteRequest(readTask(task));
          const matrix = loadCapabilities(options.capabilities);
          const offline = options.offline
            .split(',')
            .map((name) => name.trim())
            .filter((name) => name !== '');
          const decision = routeTask(request, matrix, presenceOf(matrix, offline));
          if (options.json) printJson(decision);
          else for (const line of explainLines(decision)) printLine(line);
        }),
    );
}
