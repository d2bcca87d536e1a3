import type { Command } from 'commander';
import { defaultDataDir } from '../data-dir.js';
import { printJson, printLine } from '../output.js';

// `ctxbus replay SESSION [--turn T]`: seed 002's replay of recorded turn contexts, from the
// snapshot files under the data directory alone.

interface ReplayCommandOptions {
  turn?: string;
  agent?: string;
  data?: string;
  json?: boolean;
}

export function registerReplay(
  program: Command,
  run: (action: () => Promise<void>) => Promise<void>,
) {
  program
    .command('replay')
    .description(
      "rebuild a session's recorded turn contexts from the local snapshot files (no hub) and prove each hash; exit 1 naming the first difference",
    )
    .argument('<session>', 'the session id the adapter recorded the turns under')
    .option('--turn <turn>', 'only this turn id')
    .option(
      '--agent <agent>',
      'the agent whose session it is (needed when two agents share the id)',
    )
    .option('-d, --data <dir>', `data directory (default: $CTXBUS_DATA or ${defaultDataDir()})`)
    .option('--json', 'print the outcome of each turn as JSON')
    .addHelpText(
      'after',
      `
Files: <data>/agents/<agent>/context/<session>.jsonl, one line per turn (the snapshot, the
inputs and the trace); failed builds are in <data>/agents/<agent>/audit/<session>.jsonl.
Exit codes: 0 every hash proven, 1 a turn differs, 2 the session is recorded for several
agents (name one with --agent), 4 no such session or turn.`,
    )
    .action((session: string, options: ReplayCommandOptions) =>
      run(async () => {
        const { replaySession } = await import('../turn-replay.js');
        const replay = replaySession({
          dataDir: options.data ?? defaultDataDir(),
          sessionId: session,
          ...(options.agent !== undefined && { agentId: options.agent }),
          ...(options.turn !== undefined && { turnId: options.turn }),
        });
        if (options.json) printJson(replay);
        else {
          for (const turn of replay.turns) {
            const name = `turn ${turn.turnId ?? '?'} (line ${turn.line})`;
            printLine(
              turn.proven
                ? `${name}: ${turn.contextHash} proven`
                : `${name}: differs; first difference: ${turn.difference}`,
            );
          }
        }
        const differing = replay.turns.filter((turn) => !turn.proven).length;
        const total = replay.turns.length;
        if (differing > 0) {
          throw new Error(
            `session ${replay.sessionId} (agent ${replay.agentId}): ${differing} of ${total} turn${total === 1 ? '' : 's'} ${differing === 1 ? 'differs' : 'differ'} from ${replay.path}`,
          );
        }
        if (!options.json) {
          printLine(
            `session ${replay.sessionId} (agent ${replay.agentId}): ${total} turn${total === 1 ? '' : 's'} rebuilt from ${replay.path}, every hash proven`,
          );
        }
      }),
    );
}
