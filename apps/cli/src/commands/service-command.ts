import type { Command } from 'commander';
import { SERVICE_UNIT_NAME } from '../systemd-unit.js';

// `ctxbus service ...`: the commands; service.ts loads when one runs.

const INSTALL_HELP = `
Writes ~/.config/systemd/user/ctxbus.service (under $XDG_CONFIG_HOME when set): its
ExecStart runs this Node binary and this ctxbus with "serve" and the options given (port,
host and data directory always written out, paths made absolute), Restart=on-failure. With a
systemd user manager it then runs systemctl --user daemon-reload, enable and restart
ctxbus.service, and loginctl enable-linger $USER, so the hub starts at boot and survives
logout. Run it again to change the options.

Exit codes: 0 written and started; 6 written, but systemd is not running for this user
(containers, WSL without systemd): nothing was started, and it prints how to start the hub.

Examples:
  ctxbus service install                          # the embedded store, port 7420
  ctxbus service install --port 7421 --data ~/ctxbus-data
  ctxbus service install --dry-run --store postgres://ctxbus@db:5432/ctxbus
`;

export function registerService(
  program: Command,
  run: (action: () => Promise<void>) => Promise<void>,
) {
  const service = program
    .command('service')
    .description(
      'run the hub in the background as a systemd user service (starts at boot, survives logout)',
    );
  service
    .command('install')
    .description('write the systemd user unit that runs `ctxbus serve [options]`, and start it')
    .argument('[serve-options...]', 'any `ctxbus serve` option (see ctxbus serve --help)')
    .option('--dry-run', 'print the unit; write and start nothing')
    .allowUnknownOption()
    .addHelpText('after', INSTALL_HELP)
    .action((serveArgs: string[], options: { dryRun?: boolean }) =>
      run(async () => (await import('./service.js')).install(serveArgs, options)),
    );
  service
    .command('status')
    .description(
      'the unit, what systemd says of it, and whether the hub answers (exit 6 when it does not)',
    )
    .option(
      '--url <url>',
      "the hub to ask (default: the unit's port, else $CTXBUS_URL or the saved hub)",
    )
    .option('--json', 'print the report as JSON')
    .addHelpText(
      'after',
      `
Works with or without systemd: the hub's own GET /health answers either way.

Examples:
  ctxbus service status
  ctxbus service status --json
`,
    )
    .action((options: { url?: string; json?: boolean }) =>
      run(async () => (await import('./service.js')).status(options)),
    );
  service
    .command('logs')
    .description(`the hub's logs from the journal (journalctl --user -u ${SERVICE_UNIT_NAME})`)
    .option('-f, --follow', 'keep printing new lines (Ctrl-C stops)')
    .option('-n, --lines <n>', 'how many recent lines', '100')
    .addHelpText(
      'after',
      `
Needs systemd (exit 6 without a user manager: a hub started by hand logs to its stderr).

Examples:
  ctxbus service logs -n 50
  ctxbus service logs -f
`,
    )
    .action((options: { follow?: boolean; lines: string }) =>
      run(async () => (await import('./service.js')).logs(options)),
    );
  service
    .command('uninstall')
    .description('stop and disable the service and remove its unit (keeps the data)')
    .addHelpText(
      'after',
      `
Runs systemctl --user disable --now ctxbus.service, removes the unit, and daemon-reload.

Example:
  ctxbus service uninstall
`,
    )
    .action(() => run(async () => (await import('./service.js')).uninstall()));
}
