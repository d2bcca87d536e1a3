import { CtxbusError, MAX_AUDIT_PAGE } from '@ctxbus/core';
import type { Caller } from '../caller.js';
import { implement } from '../route-definition.js';
import { firstCheckpointBreach } from '../tasks/audit-anchor.js';

// The audit log over HTTP (issue 12): a team's records page by page, and its verification.

/** The team a caller reads: a runtime token its own, an admin token the one it names. */
function auditTeam(caller: Caller, team: string | undefined): string {
  if (caller.role === 'runtime') {
    if (team !== undefined && team !== caller.teamId) {
      throw new CtxbusError(
        'forbidden',
        `this token belongs to team ${caller.teamId}; it cannot read team ${team}'s audit log`,
      );
    }
    return caller.teamId as string;
  }
  if (team === undefined) {
    throw new CtxbusError('validation_failed', 'an admin token must name the team: ?team=T');
  }
  return team;
}

const FORBIDDEN = "A runtime token asked for another team's log.";

export const auditRoutes = [
  implement('listAudit', {
    summary: "The team's audit log, oldest first",
    description:
      "Routing decisions (`task.routed`), task state changes (`task.state`, sweeps included), execution results (`execution.finished`) and approvals (`approval.*`), each linked to the one before by `prevHash` (SHA-256 over the previous hash and the record's canonical JSON). Page with `after` = the previous page's `nextAfter`.",
    tags: ['audit'],
    statuses: {
      200: 'One page of records.',
      400: 'An admin token without `team`.',
      403: FORBIDDEN,
    },
    async handler({ query, caller, services }) {
      const team = auditTeam(caller, query.team);
      const records = await services.store.listAudit(team, {
        afterSeq: query.after,
        limit: query.limit,
      });
      const last = records.at(-1);
      return {
        status: 200,
        body: {
          team,
          records,
          nextAfter: records.length === query.limit && last ? last.seq : null,
        },
      };
    },
  }),
  implement('verifyAudit', {
    summary: "Check the team's audit chain end to end",
    description:
      'Reads the whole chain in pages and recomputes every hash: `{ok: true, records, head}` when it is intact, else `{ok: false, seq, reason}` naming the first record that was changed, removed or moved (also records removed from the end). It also checks that every task event the hub has relayed has its records (a hole names the task event). A broken chain is a 200 with `ok: false`: the check itself worked. The chain is also checked against the latest checkpoint the hub signed outside the database (`anchor`): a record it covers that was rewritten, or removed with the records after it, or the whole log dropped, is `ok: false` too, even when the rewritten chain is consistent.',
    tags: ['audit'],
    statuses: { 200: 'The outcome.', 400: 'An admin token without `team`.', 403: FORBIDDEN },
    async handler({ query, caller, services }) {
      const team = auditTeam(caller, query.team);
      const outcome = await services.store.verifyAudit(team);
      const anchor = services.auditAnchor;
      if (anchor === null) return { status: 200, body: { team, ...outcome, anchor: null } };
      anchor.flush();
      const { checkpoint, unsigned, all } = anchor.read(team);
      if (checkpoint === null) {
        return { status: 200, body: { team, ...outcome, anchor: { checkpoint: null, unsigned } } };
      }
      const ageSeconds = Math.max(
        0,
        (services.clock().getTime() - Date.parse(checkpoint.at)) / 1000,
      );
      const anchored = {
        checkpoint: { seq: checkpoint.seq, hash: checkpoint.hash, at: checkpoint.at, ageSeconds },
        unsigned,
      };
      const found = await firstCheckpointBreach(all, (afterSeq) =>
        services.store.listAudit(team, { afterSeq, limit: MAX_AUDIT_PAGE }),
      );
      if (found === null) return { status: 200, body: { team, ...outcome, anchor: anchored } };
      const { reason: breach } = found;
      const seq = outcome.ok ? found.checkpoint.seq : Math.min(outcome.seq, found.checkpoint.seq);
      return {
        status: 200,
        body: {
          team,
          ok: false,
          records: outcome.records,
          seq: Math.max(1, seq),
          reason: breach,
          anchor: anchored,
        },
      };
    },
  }),
];
