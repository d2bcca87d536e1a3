import { createClient } from '@ctxbus/client';
import { parseOrThrow, teamIdSchema } from '@ctxbus/core/contract';
import { CtxbusError } from '@ctxbus/core/light';
import { hubCredentials } from '../credentials.js';
import { findAdminToken, hubUrl } from '../hub-target.js';
import { packagedRuntimeDir } from '../runtime-files.js';

export interface OpenClawFlags extends InstallFlags {
  profile?: string;
  openclaw?: string;
}

export interface InstallFlags {
  project?: string | boolean;
  user?: boolean;
  url?: string;
  token?: string;
  team?: string;
  adminToken?: string;
  uninstall?: boolean;
  /** Claude Code and OpenClaw: live push into running sessions. */
  live?: boolean;
}

/**
 * The token a runtime is installed with: --token; else one minted for it on the hub with an
 * admin token (--admin-token, $CTXBUS_ADMIN_TOKEN, or the one `ctxbus serve` saved), in --team
 * or the team of the CLI's saved token; else $CTXBUS_TOKEN.
 */
export async function installToken(
  url: string,
  runtime: string,
  flags: InstallFlags,
  label = installLabel(runtime),
): Promise<{ token: string; minted: string | null; tokenId: string | null }> {
  if (flags.token) return { token: flags.token, minted: null, tokenId: null };
  const admin = findAdminToken(url, flags.adminToken);
  if (admin) {
    const team = flags.team ?? hubCredentials(url).teamId;
    if (!team) {
      throw new CtxbusError(
        'validation_failed',
        `which team? pass --team (a new ${runtime} token is minted for it), or --token`,
      );
    }
    const teamId = parseOrThrow(teamIdSchema, team, '--team');
    const created = await createClient({ url, token: admin }).createToken({
      teamId,
      runtime,
      label,
    });
    return { token: created.token, minted: `${teamId}/${runtime}`, tokenId: created.info.id };
  }
  if (process.env.CTXBUS_TOKEN) {
    return { token: process.env.CTXBUS_TOKEN, minted: null, tokenId: null };
  }
  throw new CtxbusError(
    'validation_failed',
    `no token for ${runtime}: pass --token, or an admin token (--admin-token, CTXBUS_ADMIN_TOKEN, or a hub started here with ctxbus serve) to mint one`,
  );
}

/** The label of the tokens install mints for `runtime` (and `where`: a project, a profile). */
export const installLabel = (runtime: string, where?: string): string =>
  `ctxbus install ${runtime}${where ? ` ${where}` : ''}`.slice(0, 200);

/**
 * Revokes the tokens install minted with `label` on the hub (uninstall): with an admin token,
 * every live token of that label; without one, says how. A phrase for the output, or null when
 * there was none to revoke.
 */
export async function revokeInstallTokens(
  url: string,
  label: string,
  flags: Pick<InstallFlags, 'adminToken'>,
): Promise<string | null> {
  const admin = findAdminToken(url, flags.adminToken);
  if (!admin) {
    return `tokens minted by install (label "${label}") still work: revoke them with ctxbus token list / ctxbus token revoke ID and an admin token`;
  }
  const client = createClient({ url, token: admin, timeoutMs: 10_000 });
  let live: { id: string; teamId: string | null; runtime: string | null }[];
  try {
    live = (await client.listTokens()).filter(
      (info) => info.label === label && info.revokedAt === null,
    );
    for (const info of live) await client.revokeToken(info.id);
  } catch (error) {
    return `tokens minted by install (label "${label}") not revoked: ${(error as Error).message}`;
  }
  return live.length === 0
    ? null
    : `revoked ${live.map((info) => `${info.teamId}/${info.runtime} (${info.id})`).join(', ')}`;
}

/** Whether the hub accepts `token` (a re-run keeps a working token instead of minting). */
export async function tokenWorks(url: string, token: string): Promise<boolean> {
  try {
    await createClient({ url, token, timeoutMs: 5_000 }).list({ limit: 1 });
    return true;
  } catch {
    return false;
  }
}

// For the command's actions, which import this module when they run.
export { hubUrl, packagedRuntimeDir };
