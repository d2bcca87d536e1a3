import type { Command } from 'commander';
import { printLine } from '../output.js';

// `ctxbus connect` and `ctxbus disconnect`: the commands and their options; what they do
// (connect/connect.ts) loads when they run.

const CONNECT_HELP = `
What it does, for each runtime it finds (Claude Code, OpenClaw, Codex):
  - checks that it runs here (its version, and for OpenClaw a Node.js in its engines range:
    the node on PATH, else one this machine already has; else it says which to install);
  - prints what it will add, then wires it through the same installer as \`ctxbus install\`:
    Claude Code: hooks and the MCP server for every project (~/.claude/settings.json,
    ~/.claude.json); OpenClaw: the ctxbus plugin and MCP server (through openclaw's commands);
    Codex: its hooks (trusted) and the MCP server in ~/.codex (through codex's own commands);
  - gives it a token of its own, minted with the admin token \`ctxbus serve\` saved, and saves
    it as \`token create --save\` would (see ctxbus whoami); the CLI's own identity is unchanged.
Running it again changes nothing ("already connected"). \`ctxbus disconnect\` removes exactly
what connect added: files it wrote are put back byte for byte while unchanged since, its
tokens are revoked. What it added is recorded in $CTXBUS_CONFIG_DIR/connections.json.

Exit codes: 0 done, 1 a runtime cannot run here (the line says what to do), 2 bad input or no
admin token, 3 the hub refuses the admin token, 4 no runtime found, 6 no hub answers (start
one: ctxbus serve).

No hub answering at a loopback URL: where a systemd user manager runs, connect starts one as a
user service first (what \`ctxbus service install --port <its port>\` does: the unit, enabled,
started, lingering) and waits for it to answer; --no-service fails instead.

Examples:
  ctxbus serve &                  # or: ctxbus service install (systemd user service)
  ctxbus connect --dry-run        # what it would do, nothing written
  ctxbus connect                  # wire every runtime found
  ctxbus connect --only openclaw
  ctxbus disconnect
`;

export function registerConnect(
  program: Command,
  run: (action: () => Promise<void>) => Promise<void>,
) {
  const out = {
    line: printLine,
    progress: (line: string) => process.stderr.write(`ctxbus: ${line}\n`),
  };
  program
    .command('connect')
    .description(
      'find the agent runtimes on this machine (Claude Code, OpenClaw, Codex) and wire each to the running hub with a token of its own',
    )
    .option('--dry-run', 'print what it would do; change nothing')
    .option('--only <runtimes>', 'only these, comma-separated: claude-code, openclaw, codex')
    .option('--url <url>', 'hub URL (default: $CTXBUS_URL, else the hub saved by ctxbus serve)')
    .option(
      '--no-service',
      'when no hub answers, fail instead of starting one as a systemd user service',
    )
    .option(
      '--team <team>',
      "the runtimes' team (default: the team of the tokens saved for the hub, else your user name)",
    )
    .option(
      '--admin-token <token>',
      'admin token to mint with (default: $CTXBUS_ADMIN_TOKEN, else the one saved by ctxbus serve)',
    )
    .addHelpText('after', CONNECT_HELP)
    .action(
      (options: {
        dryRun?: boolean;
        only?: string;
        service?: boolean;
        url?: string;
        team?: string;
        adminToken?: string;
      }) =>
        run(async () => {
          const { connect } = await import('../connect/connect.js');
          await connect(options, out);
        }),
    );
  program
    .command('disconnect')
    .description('remove exactly what ctxbus connect added (files put back, its tokens revoked)')
    .option('--only <runtimes>', 'only these, comma-separated: claude-code, openclaw, codex')
    .option(
      '--admin-token <token>',
      'admin token to revoke with (default: $CTXBUS_ADMIN_TOKEN, else the one saved by ctxbus serve)',
    )
    .action((options: { only?: string; adminToken?: string }) =>
      run(async () => {
        const { disconnect } = await import('../connect/connect.js');
        await disconnect(options, out);
      }),
    );
}
