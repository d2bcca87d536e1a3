import type { CapabilitiesFile, RoutingDecision, RuntimePresence } from '@ctxbus/core/capabilities';
import { routeRequestSchema, routeTask } from '@ctxbus/core/capabilities';
import { validationError } from '@ctxbus/core/contract';
import { CtxbusError } from '@ctxbus/core/light';
import { readInput } from '../read-input.js';
import { loadCapabilities } from './capabilities.js';

// `ctxbus route --explain '<task JSON>'`: which runtime would do a task, and why, by the
// router in core (routeTask) on a capabilities file, without a hub.

/** Reads and validates the task: a bad JSON or a bad field is one line (exit 2). */
export function parseRouteRequest(text: string) {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new CtxbusError(
      'bad_json',
      `task: not JSON (${(error as Error).message}); give it as a RouteRequest, e.g. '{"requiredCapabilities":["code_execution"],"origin":"openclaw"}'`,
    );
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

/**
 * The decision for people: what, why, how, then every candidate and why it was kept or not.
 * `offline`: the presence was assumed (no hub asked): every runtime online but these.
 */
export function explainLines(decision: RoutingDecision, offline?: readonly string[]): string[] {
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
    ...(offline === undefined
      ? []
      : [
          `  presence: assumed, no hub asked: every runtime online with 1 worker${offline.length > 0 ? `, but ${offline.join(', ')} offline` : ''} (the hub's view: ctxbus capabilities show --hub)`,
        ]),
    '',
    'candidates (* chosen, + could, - could not):',
    ...rows.map(([mark, runtime, role, reason]) =>
      `  ${mark} ${(runtime ?? '').padEnd(widths[0] ?? 0)}  ${(role ?? '').padEnd(widths[1] ?? 0)}  ${reason}`.trimEnd(),
    ),
  ];
}

/** The task's JSON: the argument itself, or stdin's text for `-`. */
export function readTask(argument: string): Promise<string> {
  return argument === '-' ? readInput('-') : Promise.resolve(argument);
}

// For the command's actions, which import this module when they run.
export { loadCapabilities, routeTask };
