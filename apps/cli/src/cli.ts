import { CtxbusError } from '@ctxbus/core/light';
import { Command, CommanderError } from 'commander';
import { registerAnalytics } from './commands/analytics-command.js';
import { registerAudit } from './commands/audit-command.js';
import { registerCapabilities } from './commands/capabilities-command.js';
import { registerConflictCommands } from './commands/conflict-commands.js';
import { registerConnect } from './commands/connect-command.js';
import { registerContextCommands } from './commands/context-commands.js';
import { registerDoctor } from './commands/doctor-command.js';
import { registerHandoff } from './commands/handoff-command.js';
import { registerInstall } from './commands/install-command.js';
import { registerMcp } from './commands/mcp-command.js';
import { registerMigrate } from './commands/migrate-command.js';
import { registerOpen } from './commands/open-command.js';
import { registerReplay } from './commands/replay-command.js';
import { registerRoute } from './commands/route-command.js';
import { registerServe } from './commands/serve-command.js';
import { registerService } from './commands/service-command.js';
import { registerSharedContext } from './commands/shared-context-command.js';
import { registerSupabase } from './commands/supabase-command.js';
import { registerTaskCommands } from './commands/task-commands.js';
import { registerTelegram } from './commands/telegram-command.js';
import { registerToken } from './commands/token-command.js';
import { registerWhoamiCommand } from './commands/whoami-command.js';
import { registerWorker } from './commands/worker-command.js';
import { asFlags, EXIT, exitCodeFor, oneLine, terminalSafe } from './output.js';
import { VERSION } from './version.js';

const HELP_FOOTER = `
Hub and tokens (the first that is set wins):
  hub URL        --url, $CTXBUS_URL, else the hub \`ctxbus serve\` saved on this machine
  runtime token  --token, $CTXBUS_TOKEN, else the one \`token create --save\` saved (the CLI's:
                 a cli token; a worker's and the bot's: their runtime's; see ctxbus whoami)
  admin token    --admin-token, $CTXBUS_ADMIN_TOKEN, else the one \`ctxbus serve\` saved
  approve, deny  --token, $CTXBUS_APPROVER_TOKEN (an approver runtime's, e.g. cli), then as above
  Saved in $CTXBUS_CONFIG_DIR/credentials.json (default ~/.config/ctxbus), readable by you alone.

Environment:
  CTXBUS_DATA                  data directory (serve, offline token commands, turn snapshots)
  CTXBUS_PORT, CTXBUS_HOST     defaults for serve
  CTXBUS_TURN_SNAPSHOTS=1      adapters record each turn's context for \`ctxbus replay\`

Exit codes:
  0 ok, 1 failure, 2 bad input, 3 not authorised, 4 not found, 5 conflict, 6 hub unreachable
  A failure says why in one line on stderr (ctxbus: error: ...); stdout gets no error, --json or not

Quick start:
  ctxbus serve                                   # prints the URL and, once, an admin token (saved)
  ctxbus service install                         # or: the hub in the background (systemd)
  ctxbus connect                                 # wire Claude Code, OpenClaw and Codex, a token each
  ctxbus token create --team acme --runtime cli --save
  ctxbus write --type decision --title "Use SQLite" --content "Embedded, fast, trusted."
  ctxbus install claude-code --project .         # mints Claude Code's own token
`;

export interface RunResult {
  exitCode: number;
}

/** Builds the program. Each action runs through `run`, which turns errors into one line. */
export function createProgram(onExit: (code: number) => void): Command {
  const run = async (action: () => Promise<void>) => {
    try {
      await action();
      onExit(EXIT.ok);
    } catch (error) {
      onExit(reportError(error));
    }
  };
  const program = new Command('ctxbus')
    .description('ctxbus: one shared, structured, real-time context for your AI agent runtimes')
    .version(VERSION, '-v, --version')
    // A usage mistake (an unknown option or command, a missing argument) is one line like every
    // other failure: `ctxbus: error: unknown option '--bogus' (add --help for usage)`.
    .configureOutput({
      outputError: (message, write) =>
        // One line: a typo's "(Did you mean --type?)" comes on a second.
        write(
          `ctxbus: error: ${terminalSafe(oneLine(message.replace(/^error: /, '')))} (add --help for usage)\n`,
        ),
    })
    .addHelpText('after', HELP_FOOTER)
    .exitOverride();
  registerServe(program, run);
  registerOpen(program, run);
  registerService(program, run);
  registerToken(program, run);
  registerMigrate(program, run);
  registerSupabase(program, run);
  registerContextCommands(program, run);
  registerConnect(program, run);
  registerInstall(program, run);
  registerMcp(program, run);
  registerDoctor(program, run);
  registerCapabilities(program, run);
  registerRoute(program, run);
  registerWorker(program, run);
  registerTaskCommands(program, run);
  registerAudit(program, run);
  registerConflictCommands(program, run);
  registerAnalytics(program, run);
  registerWhoamiCommand(program, run);
  registerSharedContext(program, run);
  registerHandoff(program, run);
  registerReplay(program, run);
  registerTelegram(program, run);
  return program;
}

/** Prints a command's failure as one line on stderr; its exit code. */
function reportError(error: unknown): number {
  const message = CtxbusError.isInstance(error)
    ? error.code === 'validation_failed'
      ? asFlags(error.message)
      : error.message
    : error instanceof Error
      ? error.message
      : String(error);
  process.stderr.write(`ctxbus: error: ${terminalSafe(message)}\n`);
  return exitCodeFor(error);
}

/**
 * `ctxbus help nosuch` is a usage error like `ctxbus nosuch` (commander would print the main
 * help and exit 0, so a script could not tell a typo from an answer).
 */
function refuseHelpForUnknown(program: Command, args: readonly string[]): void {
  const [first, name] = args;
  if (first !== 'help' || name === undefined || name.startsWith('-')) return;
  const known = program.commands.some(
    (command) => command.name() === name || command.aliases().includes(name),
  );
  if (!known) program.error(`unknown command '${name}'`, { code: 'commander.unknownCommand' });
}

/** Runs the CLI with `argv` (as in process.argv) and resolves with the exit code. */
export async function runCli(argv: string[]): Promise<number> {
  let exitCode: number = EXIT.ok;
  const program = createProgram((code) => {
    exitCode = code;
  });
  try {
    refuseHelpForUnknown(program, argv.slice(2));
    await program.parseAsync(argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      if (
        error.code === 'commander.helpDisplayed' ||
        error.code === 'commander.version' ||
        error.code === 'commander.help'
      ) {
        return EXIT.ok;
      }
      return EXIT.usage;
    }
    // An option's own check (a flag's value parsed as the command line is read): one line and
    // its code, as a command's failure (exit 2 for a bad value, not 1).
    if (CtxbusError.isInstance(error)) return reportError(error);
    throw error;
  }
  return exitCode;
}
