import { z } from 'zod';
import type { CapabilitiesFile, Capability, CapabilityMode } from './capabilities.js';
import { CAPABILITY_MODES, matrixNameSchema } from './capabilities.js';

/**
 * The router (seed 000, question 3): which runtime does a task, and how. Pure and
 * deterministic: the same request, matrix and presence always give the same decision, down to
 * the order of the candidates, whatever order the file declares its runtimes in.
 *
 * Decision kinds, tried in this order:
 * 1. `native`: the origin does every required capability itself (mode `native`, or
 *    `sandboxed` within the task's constraints).
 * 2. `via-api` / `via-mcp`: the origin reaches the rest through an API or MCP path of its own
 *    (mode via-api/via-mcp WITHOUT a `target`). The kind is `via-api` when any capability goes
 *    through an API, else `via-mcp`; `modes` says which capability goes which way.
 * 3. `proxy`: another runtime that does every required capability natively or sandboxed
 *    (within the constraints), online with a worker, takes the task. A mode via-api/via-mcp
 *    WITH a `target` on the origin means exactly this, and that target is preferred.
 * 4. `queue`: the best such runtime cannot take work now (offline, or no worker connected):
 *    the task waits for it. Only when `preferences.allowQueue` (default true); otherwise
 *    runtimes that cannot take work now are dropped.
 * 5. `escalate`: no runtime can; a human must.
 *
 * Limits: a capability with `limits.network: false` cannot serve a task that needs the
 * network, one with `limits.seconds` below `constraints.seconds` cannot serve a task that
 * needs longer (whatever its mode). Presence: a runtime missing from it is offline;
 * `capacity` is carried for the task store and not used here.
 *
 * Trust: a `restricted` runtime never receives a proxied (or queued) task. A proxy or queue
 * asked for by a `restricted` origin carries `requiresApproval: true`: a human approves the
 * exact command first. An origin the file does not declare can do nothing itself and is
 * treated as restricted.
 *
 * Ties between runtimes that could take a proxied task break in this order, each key only
 * when all before it are equal:
 * 1. the task's `preferences.prefer`, in its order (listed before unlisted);
 * 2. the origin's declared `target`s, in the order of the required capabilities;
 * 3. not in `preferences.avoid` before in it;
 * 4. online (with a worker) before offline;
 * 5. native before sandboxed (fewer sandboxed capabilities first);
 * 6. more workers first;
 * 7. runtime name, in code-point order.
 * The origin is not ranked: when it can do the task itself (1, 2), it does.
 */

/** What a task needs, who asks, and how it would like to be routed. */
export const routeRequestSchema = z.strictObject({
  requiredCapabilities: z
    .array(matrixNameSchema)
    .min(1)
    .max(64)
    .meta({ description: 'Every capability the task needs, e.g. ["code_execution"].' }),
  origin: matrixNameSchema.meta({ description: 'The runtime that asks.' }),
  preferences: z
    .strictObject({
      prefer: z
        .array(matrixNameSchema)
        .max(64)
        .optional()
        .meta({ description: 'Runtimes to prefer, best first.' }),
      avoid: z
        .array(matrixNameSchema)
        .max(64)
        .optional()
        .meta({ description: 'Runtimes to take only when no other can.' }),
      allowQueue: z.boolean().default(true).meta({
        description: 'Whether the task may wait for a capable runtime that is offline.',
      }),
    })
    .optional(),
  constraints: z
    .strictObject({
      network: z.boolean().optional().meta({ description: 'The task needs the network.' }),
      seconds: z
        .number()
        .int()
        .positive()
        .max(86_400)
        .optional()
        .meta({ description: 'The task needs to run this long.' }),
    })
    .optional(),
});
export type RouteRequest = z.input<typeof routeRequestSchema>;

export const runtimePresenceSchema = z.record(
  matrixNameSchema,
  z.strictObject({
    online: z.boolean(),
    /** Connected instances able to take work. */
    workers: z.number().int().nonnegative(),
    capacity: z.number().int().nonnegative().optional(),
  }),
);
/** Who is connected now, per runtime; a runtime missing here is offline. */
export type RuntimePresence = z.input<typeof runtimePresenceSchema>;

export const ROUTING_KINDS = [
  'native',
  'via-api',
  'via-mcp',
  'proxy',
  'queue',
  'escalate',
] as const;
export type RoutingKind = (typeof ROUTING_KINDS)[number];

export const routingCandidateSchema = z.object({
  runtime: z.string(),
  /** The asking runtime (first in the list), or another that could take the task. */
  role: z.enum(['origin', 'peer']),
  kept: z.boolean(),
  reason: z.string(),
  online: z.boolean(),
  workers: z.number(),
});
export type RoutingCandidate = z.output<typeof routingCandidateSchema>;

export const routingDecisionSchema = z.object({
  kind: z.enum(ROUTING_KINDS),
  /** The runtime that does the task; null when it escalates to a human. */
  runtime: z.string().nullable(),
  /** How the chosen runtime does each required capability (empty when escalated). */
  modes: z.record(z.string(), z.enum(CAPABILITY_MODES)),
  /** The tool, API or MCP server each capability goes through, when the file names one. */
  via: z.record(z.string(), z.string().nullable()),
  requiresApproval: z.boolean(),
  /** Why a human must approve the command first; null when not. */
  approvalReason: z.string().nullable(),
  /** The origin first, then the others: kept ones best first, then dropped ones by name. */
  candidates: z.array(routingCandidateSchema),
  reason: z.string(),
});
export type RoutingDecision = z.output<typeof routingDecisionSchema>;

interface Constraints {
  network: boolean;
  seconds: number | undefined;
}

/** Why a capability entry cannot serve the task, or null when it can (limits only). */
function limitProblem(name: string, entry: Capability, constraints: Constraints): string | null {
  const limits = entry.limits;
  if (!limits) return null;
  if (constraints.network && limits.network === false) {
    return `${name} ${entry.mode === 'sandboxed' ? 'sandbox has' : 'has'} no network but the task needs it`;
  }
  if (
    constraints.seconds !== undefined &&
    limits.seconds !== undefined &&
    limits.seconds < constraints.seconds
  ) {
    return `${name} allows ${limits.seconds} s but the task needs ${constraints.seconds} s`;
  }
  return null;
}

const own = <T>(record: Readonly<Record<string, T>>, key: string): T | undefined =>
  Object.hasOwn(record, key) ? record[key] : undefined;

const byCodePoint = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

const list = (names: readonly string[]) => names.join(', ');

interface Peer {
  runtime: string;
  problems: string[];
  online: boolean;
  workers: number;
  /** Ranking keys (see the module comment), smaller is better. */
  keys: number[];
  modes: Record<string, CapabilityMode>;
  via: Record<string, string | null>;
}

const KEY_NAMES = [
  'preferred by the task',
  "the origin's declared target",
  'not avoided by the task',
  'online',
  'native rather than sandboxed',
  'more workers',
  'name order',
] as const;

/** Routes a task to the runtime that does it; see the module comment for the rules. */
export function routeTask(
  request: RouteRequest,
  matrix: CapabilitiesFile,
  presence: RuntimePresence,
): RoutingDecision {
  const required = [...new Set(request.requiredCapabilities)];
  const origin = request.origin;
  const prefer = request.preferences?.prefer ?? [];
  const avoid = new Set(request.preferences?.avoid ?? []);
  const allowQueue = request.preferences?.allowQueue ?? true;
  const constraints: Constraints = {
    network: request.constraints?.network === true,
    seconds: request.constraints?.seconds,
  };
  const presenceOf = (runtime: string) => {
    const seen = own(presence, runtime);
    return { online: seen?.online === true, workers: seen?.online ? seen.workers : 0 };
  };

  // The origin: what it does itself, reaches through a path, or hands to a declared target.
  const originEntry = own(matrix.runtimes, origin);
  const originTrust = originEntry ? (originEntry.trust ?? 'standard') : 'restricted';
  const originModes: Record<string, CapabilityMode> = {};
  const originVia: Record<string, string | null> = {};
  const originProblems: string[] = [];
  const targets: string[] = [];
  let throughPath = false;
  let throughApi = false;
  for (const name of required) {
    const entry = originEntry ? own(originEntry.capabilities, name) : undefined;
    const mode = entry?.mode ?? 'unavailable';
    originModes[name] = mode;
    originVia[name] = entry?.via ?? null;
    if (!entry || mode === 'unavailable') {
      originProblems.push(`${name} unavailable`);
      continue;
    }
    const limited = limitProblem(name, entry, constraints);
    if (limited) {
      originProblems.push(limited);
      continue;
    }
    if ((mode === 'via-api' || mode === 'via-mcp') && entry.target && entry.target !== origin) {
      originProblems.push(`${name} goes ${mode} to ${entry.target}, a proxy`);
      if (!targets.includes(entry.target)) targets.push(entry.target);
      continue;
    }
    if (mode === 'via-api' || mode === 'via-mcp') {
      throughPath = true;
      if (mode === 'via-api') throughApi = true;
    }
  }
  const originPresence = presenceOf(origin);
  const originCan = originEntry !== undefined && originProblems.length === 0;
  const originCandidate: RoutingCandidate = {
    runtime: origin,
    role: 'origin',
    kept: originCan,
    reason: !originEntry
      ? 'not declared in capabilities.yaml: treated as restricted, does nothing itself'
      : originCan
        ? `does it itself: ${required.map((name) => `${name} ${originModes[name]}`).join(', ')}`
        : `cannot do it itself: ${originProblems.join('; ')}`,
    online: originPresence.online,
    workers: originPresence.workers,
  };

  // Every other runtime, as a proxy (or queue) target.
  const peers: Peer[] = [];
  for (const runtime of Object.keys(matrix.runtimes)) {
    if (runtime === origin) continue;
    const entry = matrix.runtimes[runtime];
    if (!entry) continue;
    const problems: string[] = [];
    const modes: Record<string, CapabilityMode> = {};
    const via: Record<string, string | null> = {};
    let sandboxed = 0;
    for (const name of required) {
      const capability = own(entry.capabilities, name);
      const mode = capability?.mode ?? 'unavailable';
      modes[name] = mode;
      via[name] = capability?.via ?? null;
      if (!capability || mode === 'unavailable') problems.push(`${name} unavailable`);
      else if (mode !== 'native' && mode !== 'sandboxed') {
        problems.push(`${name} only ${mode}: a proxy target must do it natively or sandboxed`);
      } else {
        const limited = limitProblem(name, capability, constraints);
        if (limited) problems.push(limited);
        else if (mode === 'sandboxed') sandboxed++;
      }
    }
    if ((entry.trust ?? 'standard') === 'restricted') {
      problems.push('trust restricted: never receives proxied commands');
    }
    const { online, workers } = presenceOf(runtime);
    const available = online && workers > 0;
    if (problems.length === 0 && !available && !allowQueue) {
      problems.push(
        `${online ? 'no worker connected' : 'offline'}, and the task does not allow queueing`,
      );
    }
    const preferred = prefer.indexOf(runtime);
    const targeted = targets.indexOf(runtime);
    peers.push({
      runtime,
      problems,
      online,
      workers,
      keys: [
        preferred < 0 ? prefer.length : preferred,
        targeted < 0 ? targets.length : targeted,
        avoid.has(runtime) ? 1 : 0,
        available ? 0 : 1,
        sandboxed,
        -workers,
      ],
      modes,
      via,
    });
  }
  const compare = (a: Peer, b: Peer) => {
    for (let index = 0; index < a.keys.length; index++) {
      const difference = (a.keys[index] as number) - (b.keys[index] as number);
      if (difference !== 0) return difference;
    }
    return byCodePoint(a.runtime, b.runtime);
  };
  const kept = peers.filter((peer) => peer.problems.length === 0).sort(compare);
  const dropped = peers
    .filter((peer) => peer.problems.length > 0)
    .sort((a, b) => byCodePoint(a.runtime, b.runtime));
  const describePeer = (peer: Peer) => {
    const how = required.map((name) => `${name} ${peer.modes[name]}`).join(', ');
    const where =
      peer.keys[3] === 0
        ? `online, ${peer.workers} worker${peer.workers === 1 ? '' : 's'}`
        : peer.online
          ? 'online but no worker connected'
          : 'offline';
    return `can: ${how}; ${where}`;
  };
  const candidates: RoutingCandidate[] = [
    originCandidate,
    ...kept.map((peer) => ({
      runtime: peer.runtime,
      role: 'peer' as const,
      kept: true,
      reason: describePeer(peer),
      online: peer.online,
      workers: peer.workers,
    })),
    ...dropped.map((peer) => ({
      runtime: peer.runtime,
      role: 'peer' as const,
      kept: false,
      reason: peer.problems.join('; '),
      online: peer.online,
      workers: peer.workers,
    })),
  ];

  if (originCan) {
    const kind: RoutingKind = !throughPath ? 'native' : throughApi ? 'via-api' : 'via-mcp';
    const how = required
      .map((name) => {
        const through = originVia[name];
        return `${name} ${originModes[name]}${through ? ` (${through})` : ''}`;
      })
      .join(', ');
    return {
      kind,
      runtime: origin,
      modes: originModes,
      via: originVia,
      requiresApproval: false,
      approvalReason: null,
      candidates,
      reason: `${origin} does it itself: ${how}`,
    };
  }

  const best = kept[0];
  if (!best) {
    return {
      kind: 'escalate',
      runtime: null,
      modes: {},
      via: {},
      requiresApproval: false,
      approvalReason: null,
      candidates,
      reason: `no runtime can do ${list(required)}${
        constraints.network || constraints.seconds !== undefined ? ' within the constraints' : ''
      }: a human must. ${
        originEntry
          ? `${origin} cannot do it itself (${originProblems.join('; ')})`
          : `${origin} is not declared in capabilities.yaml`
      }, and no other runtime can${allowQueue ? '' : ' now (the task does not allow queueing)'}`,
    };
  }
  const runnerUp = kept[1];
  let ranked = 'the only runtime that can';
  if (runnerUp) {
    let index = 0;
    while (index < best.keys.length && best.keys[index] === runnerUp.keys[index]) index++;
    ranked = `ranked above ${runnerUp.runtime}: ${KEY_NAMES[index] ?? 'name order'}`;
  }
  const available = best.keys[3] === 0;
  const approval =
    originTrust === 'restricted'
      ? `${origin} is ${originEntry ? 'restricted' : 'not declared in capabilities.yaml (treated as restricted)'}: a human approves the exact command first`
      : null;
  const originSide = originEntry
    ? `${origin} cannot do it itself (${originProblems.join('; ')})`
    : `${origin} is not declared in capabilities.yaml`;
  return {
    kind: available ? 'proxy' : 'queue',
    runtime: best.runtime,
    modes: best.modes,
    via: best.via,
    requiresApproval: approval !== null,
    approvalReason: approval,
    candidates,
    reason: available
      ? `${originSide}; proxied to ${best.runtime} (${describePeer(best)}), ${ranked}`
      : `${originSide}; ${best.runtime} can but ${best.online ? 'has no worker connected' : 'is offline'}: the task waits for it (${ranked})`,
  };
}
