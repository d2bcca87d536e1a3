import { type SavedHubTarget, savedHubTarget } from '@ctxbus/client/saved-hub';

// Which hub the hook and the MCP server talk to, and with which token. Installed by
// `ctxbus install claude-code`, Claude Code's settings give them $CTXBUS_URL and $CTXBUS_TOKEN
// (its `env`, in the user's own settings). Installed as a plugin (`claude plugin install
// ctxbus`), nothing is written for them: they take the hub ($CTXBUS_URL, else the saved
// default hub) and Claude Code's own token from ctxbus's saved credentials (`runtimes.claude-code`,
// saved by `ctxbus connect` or `ctxbus token create --runtime claude-code --save`). A lone
// $CTXBUS_TOKEN is not taken: from a shell, it is the person's CLI identity.

/** The runtime name Claude Code's token is minted for and saved under. */
export const CLAUDE_CODE_RUNTIME = 'claude-code';

/** The hub and token, or null when neither the environment nor the saved credentials give both. */
export function findHubTarget(env: NodeJS.ProcessEnv): SavedHubTarget | null {
  const { CTXBUS_URL: url, CTXBUS_TOKEN: token } = env;
  if (url && token) return { url, token };
  return savedHubTarget(CLAUDE_CODE_RUNTIME, env, url || undefined);
}
