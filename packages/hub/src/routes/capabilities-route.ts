import type { CapabilitiesFile, CapabilitiesRuntime, PresenceInstance } from '@ctxbus/core';
import { approversOf, CtxbusError, capabilityNames, summarizePresence } from '@ctxbus/core';
import { implement } from '../route-definition.js';

/** The matrix with each runtime's live presence: declared runtimes first, then the others. */
export function capabilitiesView(
  matrix: CapabilitiesFile,
  instances: readonly PresenceInstance[],
): CapabilitiesRuntime[] {
  const byRuntime = new Map<string, PresenceInstance[]>();
  for (const instance of instances) {
    const list = byRuntime.get(instance.runtime) ?? [];
    list.push(instance);
    byRuntime.set(instance.runtime, list);
  }
  const summary = summarizePresence(instances);
  const presenceOf = (runtime: string): CapabilitiesRuntime['presence'] => {
    const live = Object.hasOwn(summary, runtime) ? summary[runtime] : undefined;
    return {
      online: live?.online ?? false,
      workers: live?.workers ?? 0,
      capacity: live?.capacity ?? 0,
      instances: (byRuntime.get(runtime) ?? []).map(({ runtime: _, ...instance }) => instance),
    };
  };
  const declared = Object.entries(matrix.runtimes).map(
    ([id, entry]): CapabilitiesRuntime => ({
      id,
      declared: true,
      description: entry.description,
      type: entry.type ?? null,
      adapter: entry.adapter ?? null,
      trust: entry.trust,
      endpoint: entry.endpoint ?? null,
      capabilities: entry.capabilities,
      presence: presenceOf(id),
    }),
  );
  const undeclared = [...byRuntime.keys()]
    .filter((id) => !Object.hasOwn(matrix.runtimes, id))
    .sort()
    .map(
      (id): CapabilitiesRuntime => ({
        id,
        declared: false,
        description: null,
        type: null,
        adapter: null,
        trust: null,
        endpoint: null,
        capabilities: {},
        presence: presenceOf(id),
      }),
    );
  return [...declared, ...undeclared];
}

/** Who approves, and whether the caller is one of them (an admin token always is). */
function callerApprovers(matrix: CapabilitiesFile, runtime: string | null) {
  const approvers = approversOf(matrix);
  return {
    ...approvers,
    caller: { runtime, approver: runtime === null || approvers.runtimes.includes(runtime) },
  };
}

export const capabilitiesRoute = implement('getCapabilities', {
  summary: "The capability matrix, with each runtime's live presence",
  description:
    "The matrix the hub loaded from its capabilities file (reloaded when the file changes; a bad edit keeps the last good one and `source.error` says why), and for each runtime the instances announced through POST /api/presence to any hub on this database, in the caller's team. Runtimes with live instances that the file does not declare appear with `declared: false`.",
  tags: ['capabilities'],
  statuses: {
    200: 'The matrix and presence.',
    403: "A runtime token asked for another team's presence.",
  },
  async handler({ query, caller, services }) {
    if (caller.role === 'runtime' && query.team !== undefined && query.team !== caller.teamId) {
      throw new CtxbusError(
        'forbidden',
        `this token belongs to team ${caller.teamId}; it cannot see team ${query.team}`,
      );
    }
    const team = caller.role === 'runtime' ? caller.teamId : (query.team ?? null);
    const matrix = services.capabilities.matrix();
    const instances = team === null ? [] : await services.presence.instances(team);
    return {
      status: 200,
      body: {
        team,
        source: services.capabilities.status(),
        capabilityNames: capabilityNames(matrix),
        runtimes: capabilitiesView(matrix, instances),
        remoteExecution: matrix.remote_execution
          ? {
              allow: [...matrix.remote_execution.allow],
              workdir: matrix.remote_execution.workdir ?? null,
            }
          : null,
        approvers: callerApprovers(matrix, caller.runtime),
      },
    };
  },
});
