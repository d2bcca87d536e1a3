import { z } from 'zod';
import type { CapabilitiesFile, Capability, CapabilityMode, TRUST_LEVELS } from './capabilities.js';
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

/** The request, read once: what the task needs and how it would like to be routed. */
interface TaskNeeds {
  /** The required capabilities, each once, in the request's order. */
  required: string[];
  origin: string;
  prefer: readonly string[];
  avoid: ReadonlySet<string>;
  allowQueue: boolean;
  constraints: Constraints;
}

function taskNeeds(request: RouteRequest): TaskNeeds {
  return {
    required: [...new Set(request.requiredCapabilities)],
    origin: request.origin,
    prefer: request.preferences?.prefer ?? [],
    avoid: new Set(request.preferences?.avoid ?? []),
    allowQueue: request.preferences?.allowQueue ?? true,
    constraints: {
      network: request.constraints?.network === true,
      seconds: request.constraints?.seconds,
    },
  };
}

/** A runtime missing from presence is offline; an offline one has no workers. */
function presenceOf(presence: RuntimePresence, runtime: string) {
  const seen = own(presence, runtime);
  return { online: seen?.online === true, workers: seen?.online ? seen.workers : 0 };
}

type RuntimeEntry = CapabilitiesFile['runtimes'][string];

/** The origin: what it does itself, reaches through a path, or hands to a declared target. */
interface OriginView {
  /** Its entry in the file; none when the file does not declare it. */
  entry: RuntimeEntry | undefined;
  /** An origin the file does not declare is treated as restricted. */
  trust: (typeof TRUST_LEVELS)[number];
  modes: Record<string, CapabilityMode>;
  via: Record<string, string | null>;
  /** Why it cannot do the task itself; empty when it can. */
  problems: string[];
  /** The runtimes its via-api/via-mcp capabilities name as `target`, in the required order. */
  targets: string[];
  /** Some capability goes through a path of its own (and some through an API). */
  throughPath: boolean;
  throughApi: boolean;
  can: boolean;
  candidate: RoutingCandidate;
}

function viewOrigin(
  needs: TaskNeeds,
  matrix: CapabilitiesFile,
  presence: RuntimePresence,
): OriginView {
  const { origin, required, constraints } = needs;
  const entry = own(matrix.runtimes, origin);
  const modes: Record<string, CapabilityMode> = {};
  const via: Record<string, string | null> = {};
  const problems: string[] = [];
  const targets: string[] = [];
  let throughPath = false;
  let throughApi = false;
  for (const name of required) {
    const capability = entry ? own(entry.capabilities, name) : undefined;
    const mode = capability?.mode ?? 'unavailable';
    modes[name] = mode;
    via[name] = capability?.via ?? null;
    if (!capability || mode === 'unavailable') {
      problems.push(`${name} unavailable`);
      continue;
    }
    const limited = limitProblem(name, capability, constraints);
    if (limited) {
      problems.push(limited);
      continue;
    }
    const target = capability.target;
    if ((mode === 'via-api' || mode === 'via-mcp') && target && target !== origin) {
      problems.push(`${name} goes ${mode} to ${target}, a proxy`);
      if (!targets.includes(target)) targets.push(target);
      continue;
    }
    if (mode === 'via-api' || mode === 'via-mcp') {
      throughPath = true;
      if (mode === 'via-api') throughApi = true;
    }
  }
  const { online, workers } = presenceOf(presence, origin);
  const can = entry !== undefined && problems.length === 0;
  const candidate: RoutingCandidate = {
    runtime: origin,
    role: 'origin',
    kept: can,
    reason: !entry
      ? 'not declared in capabilities.yaml: treated as restricted, does nothing itself'
      : can
        ? `does it itself: ${required.map((name) => `${name} ${modes[name]}`).join(', ')}`
        : `cannot do it itself: ${problems.join('; ')}`,
    online,
    workers,
  };
  const trust = entry ? (entry.trust ?? 'standard') : 'restricted';
  return { entry, trust, modes, via, problems, targets, throughPath, throughApi, can, candidate };
}

/** Another runtime as a proxy (or queue) target: what it cannot do, and its ranking keys. */
function viewPeer(
  runtime: string,
  entry: RuntimeEntry,
  needs: TaskNeeds,
  targets: readonly string[],
  presence: RuntimePresence,
): Peer {
  const { required, constraints, prefer, avoid } = needs;
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
  const { online, workers } = presenceOf(presence, runtime);
  const available = online && workers > 0;
  if (problems.length === 0 && !available && !needs.allowQueue) {
    problems.push(
      `${online ? 'no worker connected' : 'offline'}, and the task does not allow queueing`,
    );
  }
  const preferred = prefer.indexOf(runtime);
  const targeted = targets.indexOf(runtime);
  return {
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
  };
}

/** Every runtime but the origin, viewed as a peer, in the file's order. */
function viewPeers(
  needs: TaskNeeds,
  matrix: CapabilitiesFile,
  targets: readonly string[],
  presence: RuntimePresence,
): Peer[] {
  const peers: Peer[] = [];
  for (const runtime of Object.keys(matrix.runtimes)) {
    if (runtime === needs.origin) continue;
    const entry = matrix.runtimes[runtime];
    if (entry) peers.push(viewPeer(runtime, entry, needs, targets, presence));
  }
  return peers;
}

/** The peers that can take the task, best first, and those that cannot, by name. */
function rankPeers(peers: readonly Peer[]): { kept: Peer[]; dropped: Peer[] } {
  const compare = (a: Peer, b: Peer) => {
    for (let index = 0; index < a.keys.length; index++) {
      const difference = (a.keys[index] as number) - (b.keys[index] as number);
      if (difference !== 0) return difference;
    }
    return byCodePoint(a.runtime, b.runtime);
  };
  return {
    kept: peers.filter((peer) => peer.problems.length === 0).sort(compare),
    dropped: peers
      .filter((peer) => peer.problems.length > 0)
      .sort((a, b) => byCodePoint(a.runtime, b.runtime)),
  };
}

/** Online with a worker: the ranking key that says the peer can take work now. */
const isAvailable = (peer: Peer) => peer.keys[3] === 0;

function describePeer(peer: Peer, required: readonly string[]): string {
  const how = required.map((name) => `${name} ${peer.modes[name]}`).join(', ');
  const where = isAvailable(peer)
    ? `online, ${peer.workers} worker${peer.workers === 1 ? '' : 's'}`
    : peer.online
      ? 'online but no worker connected'
      : 'offline';
  return `can: ${how}; ${where}`;
}

/** The origin first, then the kept peers best first, then the dropped ones by name. */
function candidateList(
  origin: OriginView,
  ranked: { kept: readonly Peer[]; dropped: readonly Peer[] },
  required: readonly string[],
): RoutingCandidate[] {
  const peer = (entry: Peer, kept: boolean, reason: string): RoutingCandidate => ({
    runtime: entry.runtime,
    role: 'peer',
    kept,
    reason,
    online: entry.online,
    workers: entry.workers,
  });
  return [
    origin.candidate,
    ...ranked.kept.map((entry) => peer(entry, true, describePeer(entry, required))),
    ...ranked.dropped.map((entry) => peer(entry, false, entry.problems.join('; '))),
  ];
}

/** Kinds 1 and 2: the origin does it, natively or through a path of its own. */
function doItself(
  needs: TaskNeeds,
  origin: OriginView,
  candidates: RoutingCandidate[],
): RoutingDecision {
  const kind: RoutingKind = !origin.throughPath
    ? 'native'
    : origin.throughApi
      ? 'via-api'
      : 'via-mcp';
  const how = needs.required
    .map((name) => {
      const through = origin.via[name];
      return `${name} ${origin.modes[name]}${through ? ` (${through})` : ''}`;
    })
    .join(', ');
  return {
    kind,
    runtime: needs.origin,
    modes: origin.modes,
    via: origin.via,
    requiresApproval: false,
    approvalReason: null,
    candidates,
    reason: `${needs.origin} does it itself: ${how}`,
  };
}

/** Kind 5: no runtime can; a human must. */
function escalate(
  needs: TaskNeeds,
  origin: OriginView,
  candidates: RoutingCandidate[],
): RoutingDecision {
  const { constraints } = needs;
  return {
    kind: 'escalate',
    runtime: null,
    modes: {},
    via: {},
    requiresApproval: false,
    approvalReason: null,
    candidates,
    reason: `no runtime can do ${list(needs.required)}${
      constraints.network || constraints.seconds !== undefined ? ' within the constraints' : ''
    }: a human must. ${
      origin.entry
        ? `${needs.origin} cannot do it itself (${origin.problems.join('; ')})`
        : `${needs.origin} is not declared in capabilities.yaml`
    }, and no other runtime can${needs.allowQueue ? '' : ' now (the task does not allow queueing)'}`,
  };
}

/** Why `best` ranks first: the first key on which it beats the runner-up. */
function rankReason(best: Peer, runnerUp: Peer | undefined): string {
  if (!runnerUp) return 'the only runtime that can';
  let index = 0;
  while (index < best.keys.length && best.keys[index] === runnerUp.keys[index]) index++;
  return `ranked above ${runnerUp.runtime}: ${KEY_NAMES[index] ?? 'name order'}`;
}

/** Kinds 3 and 4: the best peer takes the task now (proxy), or the task waits for it (queue). */
function handOver(
  needs: TaskNeeds,
  origin: OriginView,
  best: Peer,
  runnerUp: Peer | undefined,
  candidates: RoutingCandidate[],
  team: string | undefined,
): RoutingDecision {
  const ranked = rankReason(best, runnerUp);
  const available = isAvailable(best);
  const approval =
    origin.trust === 'restricted'
      ? `${needs.origin} is ${origin.entry ? 'restricted' : 'not declared in capabilities.yaml (treated as restricted)'}: a human approves the exact command first`
      : null;
  const originSide = origin.entry
    ? `${needs.origin} cannot do it itself (${origin.problems.join('; ')})`
    : `${needs.origin} is not declared in capabilities.yaml`;
  return {
    kind: available ? 'proxy' : 'queue',
    runtime: best.runtime,
    modes: best.modes,
    via: best.via,
    requiresApproval: approval !== null,
    approvalReason: approval,
    candidates,
    reason: available
      ? `${originSide}; proxied to ${best.runtime} (${describePeer(best, needs.required)}), ${ranked}`
      : `${originSide}; ${best.runtime} can but ${best.online ? 'has no worker connected' : 'is offline'}${team === undefined ? '' : ` in team ${team}`}: the task waits for it (${ranked})`,
  };
}

/**
 * Routes a task to the runtime that does it; see the module comment for the rules. `team`:
 * whose presence this is, named when a task waits for a runtime not connected there.
 */
export function routeTask(
  request: RouteRequest,
  matrix: CapabilitiesFile,
  presence: RuntimePresence,
  options: { team?: string } = {},
): RoutingDecision {
  const needs = taskNeeds(request);
  const origin = viewOrigin(needs, matrix, presence);
  const ranked = rankPeers(viewPeers(needs, matrix, origin.targets, presence));
  const candidates = candidateList(origin, ranked, needs.required);
  if (origin.can) return doItself(needs, origin, candidates);
  const [best, runnerUp] = ranked.kept;
  if (!best) return escalate(needs, origin, candidates);
  return handOver(needs, origin, best, runnerUp, candidates, options.team);
}
