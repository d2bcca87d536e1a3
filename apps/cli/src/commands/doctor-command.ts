import { CtxbusError } from '@ctxbus/core/light';
import type { Command } from 'commander';
import { printJson, printLine } from '../output.js';

// `ctxbus doctor`: registered here; the checks (doctor.ts) load when the command runs.

const MARK = { ok: 'ok  ', warn: 'warn', fail: 'FAIL', info: '--  ' } as const;

export function registerDoctor(
  program: Command,
  run: (action: () => Promise<void>) => Promise<void>,
) {
  program
    .command('doctor')
    .description(
      'check Node, the hub, the tokens and the installed adapters, and say what to fix (changes nothing)',
    )
    .option('--url <url>', 'the hub to check (default: $CTXBUS_URL, else the saved one)')
    .option('--project <dir>', 'the project whose Claude Code install to check', '.')
    .option('--json', 'print the checks as JSON')
    .action((options: { url?: string; project: string; json?: boolean }) =>
      run(async () => {
        const { runDoctor } = await import('./doctor.js');
        const checks = await runDoctor({
          ...(options.url && { url: options.url }),
          project: options.project,
        });
        if (options.json) printJson({ checks });
        else {
          for (const check of checks) {
            printLine(`${MARK[check.status]}  ${check.name}: ${check.detail}`);
            if (check.fix && check.status !== 'ok') printLine(`      fix: ${check.fix}`);
          }
        }
        const failed = checks.filter((check) => check.status === 'fail').length;
        if (failed > 0) {
          throw new CtxbusError('internal', `${failed} check${failed === 1 ? '' : 's'} failed`);
        }
      }),
    );
}
