import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CapabilitiesFile, CapabilityMode } from './capabilities.js';
import { CAPABILITY_MODES, capabilitiesFileSchema } from './capabilities.js';
import { parseCapabilities } from './parse-capabilities.js';
import type { RouteRequest, RoutingDecision, RuntimePresence } from './routing.js';
import { routeRequestSchema, routeTask, routingDecisionSchema } from './routing.js';

const repoMatrix = parseCapabilities(
  readFileSync(new URL('../../../../capabilities.yaml', import.meta.url), 'utf8'),
);

/** Every declared runtime online with one worker, except those named. */
const presenceFor = (matrix: CapabilitiesFile, offline: string[] = []): RuntimePresence =>
  Object.fromEntries(
    Object.keys(matrix.runtimes).map((runtime) => [
      runtime,
      { online: !offline.includes(runtime), workers: offline.includes(runtime) ? 0 : 1 },
    ]),
  );

const route = (request: RouteRequest, matrix = repoMatrix, presence = presenceFor(matrix)) =>
  routingDecisionSchema.parse(routeTask(routeRequestSchema.parse(request), matrix, presence));

const candidate = (decision: RoutingDecision, runtime: string) =>
  decision.candidates.find((entry) => entry.runtime === runtime);

/** A matrix from a compact description: runtime -> capability -> mode (or a full entry). */
function matrixOf(
  runtimes: Record<
    string,
    {
      trust?: 'trusted' | 'standard' | 'restricted';
      capabilities: Record<
        string,
        | CapabilityMode
        | {
            mode: CapabilityMode;
            target?: string;
            limits?: { network?: boolean; seconds?: number };
          }
      >;
    }
  >,
): CapabilitiesFile {
  return capabilitiesFileSchema.parse({
    version: 1,
    runtimes: Object.fromEntries(
      Object.entries(runtimes).map(([name, entry]) => [
        name,
        {
          description: name,
          ...(entry.trust && { trust: entry.trust }),
          capabilities: Object.fromEntries(
            Object.entries(entry.capabilities).map(([capability, value]) => [
              capability,
              typeof value === 'string' ? { mode: value } : value,
            ]),
          ),
        },
      ]),
    ),
  });
}

describe('routeTask on the repository capabilities.yaml', () => {
  it('native: Claude Code runs code itself', () => {
    const decision = route({ requiredCapabilities: ['code_execution'], origin: 'claude-code' });
    expect(decision).toMatchObject({
      kind: 'native',
      runtime: 'claude-code',
      modes: { code_execution: 'native' },
      via: { code_execution: 'Bash' },
      requiresApproval: false,
    });
    expect(decision.reason).toBe('claude-code does it itself: code_execution native (Bash)');
    expect(decision.candidates.map((entry) => entry.runtime)).toEqual([
      'claude-code',
      'codex',
      'web',
      'openclaw',
    ]);
    expect(candidate(decision, 'openclaw')).toMatchObject({
      kept: false,
      reason: 'code_execution only via-api: a proxy target must do it natively or sandboxed',
    });
  });

  it('via-mcp and via-api: OpenClaw searches through an MCP server, remembers through the API', () => {
    expect(route({ requiredCapabilities: ['search'], origin: 'openclaw' })).toMatchObject({
      kind: 'via-mcp',
      runtime: 'openclaw',
      modes: { search: 'via-mcp' },
      via: { search: 'web-search' },
    });
    expect(
      route({ requiredCapabilities: ['search', 'memory', 'communication'], origin: 'openclaw' }),
    ).toMatchObject({
      kind: 'via-api',
      runtime: 'openclaw',
      modes: { search: 'via-mcp', memory: 'via-api', communication: 'native' },
    });
  });

  it("proxy: OpenClaw's code goes to its declared target, Claude Code, ahead of Codex and the web sandbox", () => {
    const decision = route({ requiredCapabilities: ['code_execution'], origin: 'openclaw' });
    expect(decision).toMatchObject({
      kind: 'proxy',
      runtime: 'claude-code',
      modes: { code_execution: 'native' },
      requiresApproval: false,
      approvalReason: null,
    });
    expect(decision.reason).toContain("ranked above codex: the origin's declared target");
    expect(decision.candidates).toEqual([
      {
        runtime: 'openclaw',
        role: 'origin',
        kept: false,
        reason: 'cannot do it itself: code_execution goes via-api to claude-code, a proxy',
        online: true,
        workers: 1,
      },
      {
        runtime: 'claude-code',
        role: 'peer',
        kept: true,
        reason: 'can: code_execution native; online, 1 worker',
        online: true,
        workers: 1,
      },
      {
        runtime: 'codex',
        role: 'peer',
        kept: true,
        reason: 'can: code_execution native; online, 1 worker',
        online: true,
        workers: 1,
      },
      {
        runtime: 'web',
        role: 'peer',
        kept: true,
        reason: 'can: code_execution sandboxed; online, 1 worker',
        online: true,
        workers: 1,
      },
    ]);
  });

  it('proxy: preferences.prefer comes before the declared target', () => {
    const decision = route({
      requiredCapabilities: ['code_execution'],
      origin: 'openclaw',
      preferences: { prefer: ['web'] },
    });
    expect(decision).toMatchObject({ kind: 'proxy', runtime: 'web' });
    expect(decision.reason).toContain('ranked above claude-code: preferred by the task');
  });

  it('limits: the web sandbox has no network and 30 s, so such tasks leave it', () => {
    expect(
      route({
        requiredCapabilities: ['code_execution'],
        origin: 'web',
        constraints: { seconds: 20 },
      }),
    ).toMatchObject({ kind: 'native', runtime: 'web', modes: { code_execution: 'sandboxed' } });
    const networked = route({
      requiredCapabilities: ['code_execution'],
      origin: 'web',
      constraints: { network: true },
    });
    expect(networked).toMatchObject({ kind: 'proxy', runtime: 'claude-code' });
    expect(candidate(networked, 'web')?.reason).toBe(
      'cannot do it itself: code_execution sandbox has no network but the task needs it',
    );
    const long = route({
      requiredCapabilities: ['code_execution'],
      origin: 'openclaw',
      preferences: { prefer: ['web'] },
      constraints: { seconds: 60 },
    });
    expect(long).toMatchObject({ kind: 'proxy', runtime: 'claude-code' });
    expect(candidate(long, 'web')).toMatchObject({
      kept: false,
      reason: 'code_execution allows 30 s but the task needs 60 s',
    });
  });

  it('queue: the declared target is offline, so the task waits for it', () => {
    const decision = route(
      { requiredCapabilities: ['code_execution'], origin: 'openclaw' },
      repoMatrix,
      presenceFor(repoMatrix, ['claude-code']),
    );
    expect(decision).toMatchObject({ kind: 'queue', runtime: 'claude-code' });
    expect(decision.reason).toContain('claude-code can but is offline: the task waits for it');
    expect(candidate(decision, 'claude-code')?.reason).toBe('can: code_execution native; offline');
    // Presence is a team's: the hub names it, so a worker connected in another team is no riddle.
    const hub = routeTask(
      { requiredCapabilities: ['code_execution'], origin: 'openclaw' },
      repoMatrix,
      presenceFor(repoMatrix, ['claude-code']),
      { team: 'root' },
    );
    expect(hub.reason).toContain('claude-code can but is offline in team root: the task waits');
  });

  it('without queueing an offline target is dropped: the web sandbox takes it, or no one', () => {
    // Codex, which runs code natively too, is offline as well.
    const presence = presenceFor(repoMatrix, ['claude-code', 'codex']);
    const request = {
      requiredCapabilities: ['code_execution'],
      origin: 'openclaw',
      preferences: { allowQueue: false },
    };
    const decision = route(request, repoMatrix, presence);
    expect(decision).toMatchObject({ kind: 'proxy', runtime: 'web' });
    expect(candidate(decision, 'claude-code')).toMatchObject({
      kept: false,
      reason: 'offline, and the task does not allow queueing',
    });
    const escalated = route({ ...request, constraints: { network: true } }, repoMatrix, presence);
    expect(escalated).toMatchObject({ kind: 'escalate', runtime: null, modes: {}, via: {} });
    expect(escalated.reason).toMatch(
      /^no runtime can do code_execution within the constraints: a human must\. openclaw cannot do it itself/,
    );
  });

  it('escalate: no runtime has the capability', () => {
    const decision = route({ requiredCapabilities: ['deploy'], origin: 'claude-code' });
    expect(decision).toMatchObject({ kind: 'escalate', runtime: null, requiresApproval: false });
    expect(decision.reason).toBe(
      'no runtime can do deploy: a human must. claude-code cannot do it itself (deploy unavailable), and no other runtime can',
    );
    expect(decision.candidates.every((entry) => !entry.kept)).toBe(true);
  });

  it('an undeclared origin is treated as restricted: its proxy needs a human approval', () => {
    const decision = route({ requiredCapabilities: ['memory'], origin: 'my-agent' });
    expect(decision).toMatchObject({ kind: 'proxy', runtime: 'web', requiresApproval: true });
    expect(decision.approvalReason).toBe(
      'my-agent is not declared in capabilities.yaml (treated as restricted): a human approves the exact command first',
    );
    expect(decision.candidates[0]).toMatchObject({
      runtime: 'my-agent',
      role: 'origin',
      kept: false,
      reason: 'not declared in capabilities.yaml: treated as restricted, does nothing itself',
    });
  });
});

describe('routeTask on small matrices', () => {
  it('trust: a restricted runtime never receives a proxied task; a restricted origin needs approval', () => {
    const matrix = matrixOf({
      bot: { trust: 'restricted', capabilities: { chat: 'native' } },
      box: { trust: 'restricted', capabilities: { run: 'native' } },
      dev: { capabilities: { run: 'sandboxed' } },
    });
    const decision = route({ requiredCapabilities: ['run'], origin: 'bot' }, matrix);
    expect(decision).toMatchObject({ kind: 'proxy', runtime: 'dev', requiresApproval: true });
    expect(decision.approvalReason).toBe(
      'bot is restricted: a human approves the exact command first',
    );
    expect(candidate(decision, 'box')).toMatchObject({
      kept: false,
      reason: 'trust restricted: never receives proxied commands',
    });
    // A restricted runtime still does its own work.
    expect(route({ requiredCapabilities: ['run'], origin: 'box' }, matrix)).toMatchObject({
      kind: 'native',
      runtime: 'box',
      requiresApproval: false,
    });
    // And with only restricted runtimes able, no one can.
    expect(
      route(
        { requiredCapabilities: ['run'], origin: 'bot' },
        matrixOf({
          bot: { capabilities: {} },
          box: { trust: 'restricted', capabilities: { run: 'native' } },
        }),
      ),
    ).toMatchObject({ kind: 'escalate' });
  });

  it('breaks ties in the documented order: avoid, online, native, workers, name', () => {
    const matrix = matrixOf({
      origin: { capabilities: {} },
      alpha: { capabilities: { run: 'native' } },
      beta: { capabilities: { run: 'native' } },
      gamma: { capabilities: { run: 'sandboxed' } },
    });
    const everyone: RuntimePresence = {
      alpha: { online: true, workers: 1 },
      beta: { online: true, workers: 1 },
      gamma: { online: true, workers: 5 },
    };
    const pick = (request: Partial<RouteRequest>, presence = everyone) =>
      route({ requiredCapabilities: ['run'], origin: 'origin', ...request }, matrix, presence);
    expect(pick({}).runtime).toBe('alpha');
    expect(pick({}).reason).toContain('ranked above beta: name order');
    expect(pick({}).candidates.map((entry) => entry.runtime)).toEqual([
      'origin',
      'alpha',
      'beta',
      'gamma',
    ]);
    expect(pick({ preferences: { avoid: ['alpha'] } })).toMatchObject({ runtime: 'beta' });
    expect(pick({ preferences: { avoid: ['alpha', 'gamma'] } }).reason).toContain(
      'ranked above alpha: not avoided by the task',
    );
    expect(pick({ preferences: { avoid: ['alpha', 'beta'] } }).runtime).toBe('gamma');
    const busy = { ...everyone, alpha: { online: true, workers: 2 } };
    expect(pick({}, busy).reason).toContain('ranked above beta: more workers');
    const alphaAway = { ...everyone, alpha: { online: false, workers: 0 } };
    expect(pick({}, alphaAway)).toMatchObject({ kind: 'proxy', runtime: 'beta' });
    expect(pick({}, alphaAway).reason).toContain(
      'ranked above gamma: native rather than sandboxed',
    );
    const nativeAway = {
      ...everyone,
      alpha: { online: false, workers: 0 },
      beta: { online: true, workers: 0 },
    };
    const sandbox = pick({}, nativeAway);
    expect(sandbox).toMatchObject({ kind: 'proxy', runtime: 'gamma' });
    expect(sandbox.reason).toContain('ranked above alpha: online');
    expect(candidate(sandbox, 'beta')?.reason).toBe(
      'can: run native; online but no worker connected',
    );
    // Preferring an offline runtime queues for it.
    expect(pick({ preferences: { prefer: ['alpha'] } }, nativeAway)).toMatchObject({
      kind: 'queue',
      runtime: 'alpha',
    });
  });

  it('a via-api/via-mcp path without a target is the origin’s own; with one it is a proxy', () => {
    const matrix = matrixOf({
      chat: {
        capabilities: {
          run: { mode: 'via-mcp', target: 'dev' },
          find: 'via-mcp',
        },
      },
      dev: { capabilities: { run: 'native' } },
      ops: { capabilities: { run: 'native' } },
    });
    expect(route({ requiredCapabilities: ['find'], origin: 'chat' }, matrix)).toMatchObject({
      kind: 'via-mcp',
      runtime: 'chat',
    });
    const proxied = route(
      { requiredCapabilities: ['run'], origin: 'chat' },
      matrix,
      presenceFor(matrix, ['dev']),
    );
    // dev is the declared target: it ranks first even offline, so the task waits for it.
    expect(proxied).toMatchObject({ kind: 'queue', runtime: 'dev' });
  });

  it('a runtime missing from presence is offline', () => {
    const matrix = matrixOf({ a: { capabilities: {} }, b: { capabilities: { run: 'native' } } });
    expect(routeTask({ requiredCapabilities: ['run'], origin: 'a' }, matrix, {})).toMatchObject({
      kind: 'queue',
      runtime: 'b',
    });
  });

  it('refuses a request without capabilities or with a bad origin at the schema', () => {
    expect(routeRequestSchema.safeParse({ requiredCapabilities: [], origin: 'a' }).success).toBe(
      false,
    );
    expect(
      routeRequestSchema.safeParse({ requiredCapabilities: ['run'], origin: 'Bad Name' }).success,
    ).toBe(false);
    expect(
      routeRequestSchema.parse({ requiredCapabilities: ['run'], origin: 'a', preferences: {} })
        .preferences?.allowQueue,
    ).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------
// Properties, on random matrices, presence and requests.

const RUNTIMES = ['ant', 'bee', 'cat', 'dog', 'eel'] as const;
const CAPABILITIES = ['c1', 'c2', 'c3'] as const;

const limitsArbitrary = fc.option(
  fc.record(
    { network: fc.boolean(), seconds: fc.integer({ min: 1, max: 100 }) },
    { requiredKeys: [] },
  ),
  { nil: undefined },
);

const capabilityArbitrary = fc.record(
  {
    mode: fc.constantFrom(...CAPABILITY_MODES),
    target: fc.constantFrom(...RUNTIMES),
    limits: limitsArbitrary,
  },
  { requiredKeys: ['mode'] },
);

const matrixArbitrary = fc
  .dictionary(
    fc.constantFrom(...RUNTIMES),
    fc.record({
      trust: fc.constantFrom('trusted', 'standard', 'restricted'),
      capabilities: fc.dictionary(fc.constantFrom(...CAPABILITIES), capabilityArbitrary),
    }),
    { minKeys: 1 },
  )
  .map((runtimes) =>
    capabilitiesFileSchema.parse({
      version: 1,
      runtimes: Object.fromEntries(
        Object.entries(runtimes).map(([name, entry]) => [
          name,
          {
            description: name,
            trust: entry.trust,
            capabilities: Object.fromEntries(
              Object.entries(entry.capabilities).map(([capability, value]) => [
                capability,
                Object.fromEntries(Object.entries(value).filter(([, part]) => part !== undefined)),
              ]),
            ),
          },
        ]),
      ),
    }),
  );

const presenceArbitrary: fc.Arbitrary<RuntimePresence> = fc.dictionary(
  fc.constantFrom(...RUNTIMES),
  fc.record({ online: fc.boolean(), workers: fc.integer({ min: 0, max: 3 }) }),
);

const requestArbitrary = fc.record(
  {
    requiredCapabilities: fc.uniqueArray(fc.constantFrom(...CAPABILITIES), {
      minLength: 1,
      maxLength: 3,
    }),
    // 'fox' is never declared.
    origin: fc.constantFrom(...RUNTIMES, 'fox'),
    preferences: fc.record(
      {
        prefer: fc.uniqueArray(fc.constantFrom(...RUNTIMES), { maxLength: 3 }),
        avoid: fc.uniqueArray(fc.constantFrom(...RUNTIMES), { maxLength: 3 }),
        allowQueue: fc.boolean(),
      },
      { requiredKeys: [] },
    ),
    constraints: fc.record(
      { network: fc.boolean(), seconds: fc.integer({ min: 1, max: 100 }) },
      { requiredKeys: [] },
    ),
  },
  { requiredKeys: ['requiredCapabilities', 'origin'] },
);

type Entry = CapabilitiesFile['runtimes'][string]['capabilities'][string];

function withinLimits(entry: Entry, request: RouteRequest): boolean {
  const limits = entry.limits;
  if (request.constraints?.network && limits?.network === false) return false;
  const seconds = request.constraints?.seconds;
  return !(seconds !== undefined && limits?.seconds !== undefined && limits.seconds < seconds);
}

/** The oracle: who could take the task, checked runtime by runtime, from the rules alone. */
function whoCould(request: RouteRequest, matrix: CapabilitiesFile, presence: RuntimePresence) {
  const origin = matrix.runtimes[request.origin];
  const originCan =
    origin !== undefined &&
    request.requiredCapabilities.every((name) => {
      const entry = origin.capabilities[name];
      if (!entry || entry.mode === 'unavailable' || !withinLimits(entry, request)) return false;
      const viaTarget =
        (entry.mode === 'via-api' || entry.mode === 'via-mcp') &&
        entry.target !== undefined &&
        entry.target !== request.origin;
      return !viaTarget;
    });
  const peers = Object.entries(matrix.runtimes)
    .filter(([name, entry]) => {
      if (name === request.origin || entry.trust === 'restricted') return false;
      const seen = presence[name];
      const available = seen?.online === true && seen.workers > 0;
      if (!available && request.preferences?.allowQueue === false) return false;
      return request.requiredCapabilities.every((capability) => {
        const found = entry.capabilities[capability];
        return (
          found !== undefined &&
          (found.mode === 'native' || found.mode === 'sandboxed') &&
          withinLimits(found, request)
        );
      });
    })
    .map(([name]) => name);
  return { originCan, peers };
}

/** The same matrix with its runtimes declared in another order (sorted by random keys). */
const shuffled = (matrix: CapabilitiesFile, keys: readonly number[]): CapabilitiesFile => ({
  ...matrix,
  runtimes: Object.fromEntries(
    Object.entries(matrix.runtimes)
      .map((entry, index) => ({ entry, key: keys[index] ?? 0 }))
      .sort((a, b) => a.key - b.key)
      .map(({ entry }) => entry),
  ),
});

describe('routeTask properties', () => {
  const everyCase = (
    check: (
      request: RouteRequest,
      matrix: CapabilitiesFile,
      presence: RuntimePresence,
      decision: RoutingDecision,
    ) => void,
  ) =>
    fc.assert(
      fc.property(
        requestArbitrary,
        matrixArbitrary,
        presenceArbitrary,
        (request, matrix, presence) => {
          check(request, matrix, presence, routeTask(request, matrix, presence));
        },
      ),
      { numRuns: 500 },
    );

  it('never routes to a runtime whose mode for a required capability is unavailable', () => {
    everyCase((request, matrix, _presence, decision) => {
      if (decision.runtime === null) return;
      for (const name of request.requiredCapabilities) {
        const mode = matrix.runtimes[decision.runtime]?.capabilities[name]?.mode ?? 'unavailable';
        expect(mode).not.toBe('unavailable');
        expect(decision.modes[name]).toBe(mode);
        if (decision.kind === 'proxy' || decision.kind === 'queue') {
          expect(['native', 'sandboxed']).toContain(mode);
        }
      }
    });
  });

  it('is deterministic, whatever order the file declares its runtimes in', () => {
    fc.assert(
      fc.property(
        requestArbitrary,
        matrixArbitrary,
        presenceArbitrary,
        fc.array(fc.integer(), { minLength: RUNTIMES.length, maxLength: RUNTIMES.length }),
        (request, matrix, presence, keys) => {
          const first = routeTask(request, matrix, presence);
          expect(routeTask(request, matrix, presence)).toEqual(first);
          const again = routeTask(request, shuffled(matrix, keys), presence);
          expect(JSON.stringify(again)).toBe(JSON.stringify(first));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('gives every request a valid decision with a reason, and a reason for every candidate', () => {
    everyCase((request, matrix, _presence, decision) => {
      expect(routingDecisionSchema.safeParse(decision).success).toBe(true);
      expect(decision.reason.length).toBeGreaterThan(0);
      const names = decision.candidates.map((entry) => entry.runtime);
      expect(names[0]).toBe(request.origin);
      expect([...names].sort()).toEqual(
        [...new Set([request.origin, ...Object.keys(matrix.runtimes)])].sort(),
      );
      for (const entry of decision.candidates) expect(entry.reason.length).toBeGreaterThan(0);
      if (decision.runtime !== null) {
        expect(candidate(decision, decision.runtime)?.kept).toBe(true);
      }
    });
  });

  it('never proxies or queues to a restricted runtime; a restricted origin needs approval', () => {
    everyCase((request, matrix, _presence, decision) => {
      const away = decision.kind === 'proxy' || decision.kind === 'queue';
      if (away) expect(matrix.runtimes[decision.runtime ?? '']?.trust).not.toBe('restricted');
      const originRestricted =
        (matrix.runtimes[request.origin]?.trust ?? 'restricted') === 'restricted';
      expect(decision.requiresApproval).toBe(away && originRestricted);
    });
  });

  it('queues only for a runtime that cannot take work now, and only when queueing is allowed', () => {
    everyCase((request, _matrix, presence, decision) => {
      if (decision.kind !== 'queue' && decision.kind !== 'proxy') return;
      const seen = presence[decision.runtime ?? ''];
      const available = seen?.online === true && seen.workers > 0;
      if (decision.kind === 'queue') {
        expect(available).toBe(false);
        expect(request.preferences?.allowQueue).not.toBe(false);
      } else {
        expect(available).toBe(true);
      }
    });
  });

  it('escalates exactly when no runtime could, by a brute-force oracle', () => {
    everyCase((request, matrix, presence, decision) => {
      const { originCan, peers } = whoCould(request, matrix, presence);
      expect(decision.kind === 'escalate').toBe(!originCan && peers.length === 0);
      if (originCan) expect(decision.runtime).toBe(request.origin);
      else if (decision.runtime !== null) expect(peers).toContain(decision.runtime);
    });
  });
});
