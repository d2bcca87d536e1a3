import { credentialsPath, hubCredentials } from '../credentials.js';
import { findHubUrl } from '../hub-target.js';

/** What `ctxbus whoami` reports: names and sources, no secrets. */
export interface Identities {
  hub: { url: string; from: 'flag' | 'env' | 'saved' } | null;
  /** Whom the CLI's own commands (write, read, approve, ...) act as. */
  cli: { from: 'saved'; teamId: string | null; runtime: string | null } | { from: 'env' } | null;
  admin: 'saved' | 'env' | null;
  /** Runtime tokens saved on this machine (ctxbus worker, ctxbus telegram). */
  runtimes: { runtime: string; teamId: string }[];
  file: string;
}

export function identities(flag: string | undefined): Identities {
  const url = findHubUrl(flag);
  const from = flag ? 'flag' : process.env.CTXBUS_URL ? 'env' : 'saved';
  const saved = url === null ? {} : hubCredentials(url);
  const cli = process.env.CTXBUS_TOKEN
    ? { from: 'env' as const }
    : saved.token
      ? { from: 'saved' as const, teamId: saved.teamId ?? null, runtime: saved.runtime ?? null }
      : null;
  return {
    hub: url === null ? null : { url, from },
    cli,
    admin: process.env.CTXBUS_ADMIN_TOKEN ? 'env' : saved.adminToken ? 'saved' : null,
    runtimes: Object.entries(saved.runtimes ?? {}).map(([runtime, entry]) => ({
      runtime,
      teamId: entry.teamId,
    })),
    file: credentialsPath(),
  };
}

/**
 * Why what the CLI writes would not be in front of the runtimes saved for the same hub: they
 * act in another team (`connect` wired them in its team; a cli token was minted for another).
 */
export function teamMismatch(found: Identities): string | null {
  const cli = found.cli;
  if (cli?.from !== 'saved' || cli.teamId === null) return null;
  const others = [...new Set(found.runtimes.map((entry) => entry.teamId))].filter(
    (team) => team !== cli.teamId,
  );
  if (others.length === 0) return null;
  return `the CLI acts in team ${cli.teamId}, saved runtimes in team ${others.join(', ')}: what the CLI writes is not in their context (teams share nothing); ctxbus token create --team ${others[0]} --runtime cli --save`;
}

export function identityLines(found: Identities): string[] {
  const source = { flag: '--url', env: '$CTXBUS_URL', saved: 'the saved default' };
  const cli = found.cli;
  return [
    `hub       ${found.hub ? `${found.hub.url} (${source[found.hub.from]})` : 'none: pass --url, set CTXBUS_URL, or run ctxbus serve'}`,
    `cli       ${
      cli === null
        ? 'acts as no one: ctxbus token create --team TEAM --runtime cli --save'
        : cli.from === 'env'
          ? 'acts as the token in $CTXBUS_TOKEN'
          : `acts as ${cli.teamId ?? '?'}/${cli.runtime ?? '?'} (saved)`
    }`,
    `admin     ${found.admin === 'env' ? '$CTXBUS_ADMIN_TOKEN' : found.admin === 'saved' ? 'saved' : 'none saved'}`,
    `runtimes  ${
      found.runtimes.length === 0
        ? 'none saved (ctxbus worker and ctxbus telegram use --token or $CTXBUS_TOKEN)'
        : found.runtimes.map((entry) => `${entry.teamId}/${entry.runtime}`).join(', ')
    }`,
    `file      ${found.file}`,
    ...[teamMismatch(found)].flatMap((note) => (note === null ? [] : [`note      ${note}`])),
  ];
}
