import { join } from 'node:path';
import { CtxbusError } from '@ctxbus/core/light';
import type { Command } from 'commander';
import { printLine } from '../output.js';
import type { TelegramFlags } from './telegram.js';

// `ctxbus telegram`: the command and its options; what it does (telegram.ts) loads when it runs.

function minutes(value: string): number {
  const number = Number(value);
  if (!Number.isFinite(number) || number <= 0 || number > 24 * 60) {
    throw new CtxbusError(
      'validation_failed',
      `--digest-interval takes minutes, from 0.1 to 1440 (got "${value}")`,
    );
  }
  return Math.round(number * 60_000);
}

function port(value: string): number {
  if (!/^\d{1,5}$/.test(value) || Number(value) > 65_535) {
    throw new CtxbusError(
      'validation_failed',
      `--webhook-port takes a port number (got "${value}")`,
    );
  }
  return Number(value);
}

export function registerTelegram(
  program: Command,
  run: (action: () => Promise<void>) => Promise<void>,
) {
  program
    .command('telegram')
    .description(
      'a Telegram bot for the team: blocking items at once, a digest, commands, one-tap approvals',
    )
    .option('--url <url>', 'hub URL (default: $CTXBUS_URL, else the hub saved by ctxbus serve)')
    .option(
      '--token <token>',
      "the bot's runtime token, e.g. one for runtime telegram (default: $CTXBUS_TOKEN, else saved)",
    )
    .option(
      '--chat <id>',
      'a chat the bot serves (repeatable; default: $CTXBUS_TELEGRAM_CHATS, comma-separated)',
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option(
      '--approver <user-id>',
      'a Telegram user id whose taps on Approve / Deny count (repeatable; default: $CTXBUS_TELEGRAM_APPROVERS; none: every tap is refused)',
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option('--state <file>', 'stream cursor, digest queue and /watch tags (default: see below)')
    .option('--digest-interval <minutes>', 'how often attention items go out as a digest', '10')
    .option('--shared-context-dir <dir>', "seed 001's shared-context directory (for /priorities)")
    .option('--api-root <url>', 'another Bot API server (self-hosted, or a test double)')
    .option(
      '--webhook-url <url>',
      'receive updates by webhook at this public URL (default: polling)',
    )
    .option(
      '--webhook-secret <secret>',
      'the X-Telegram-Bot-Api-Secret-Token updates must carry (default: $CTXBUS_TELEGRAM_WEBHOOK_SECRET)',
    )
    .option('--webhook-host <host>', 'where the webhook server listens', '127.0.0.1')
    .option(
      '--webhook-port <port>',
      'its port (put a TLS proxy for --webhook-url in front)',
      '8443',
    )
    .addHelpText(
      'after',
      `
Environment:
  CTXBUS_TELEGRAM_TOKEN           the bot token from @BotFather (required; never logged)
  CTXBUS_TELEGRAM_CHATS           chat ids served, comma-separated (else --chat)
  CTXBUS_TELEGRAM_APPROVERS       approvers' Telegram user ids, comma-separated (else --approver)
  CTXBUS_TELEGRAM_WEBHOOK_SECRET  webhook secret (else --webhook-secret)

The bot serves one team, its token's, in every chat given; updates from other chats are
ignored and logged without their content. State defaults to
$CTXBUS_CONFIG_DIR/telegram-state.json (~/.config/ctxbus). Give the bot its own runtime
token (runtime "telegram", an approver in capabilities.yaml): the hub refuses decisions from
an agent's runtime. Only taps from the --approver user ids count, and only on the message the
bot sent for that task; anyone else who can post in a served chat is refused, and with no
approver every tap is. The same holds for /decide, which writes a decision every agent reads. In a chat: /context /tasks /search /decide /priorities /watch /help.

Example:
  ctxbus token create --team acme --runtime telegram --save
  export CTXBUS_TELEGRAM_TOKEN=123456:ABC...      # from @BotFather
  ctxbus telegram --chat 123456789 --approver 123456789 --digest-interval 10`,
    )
    .action((flags: TelegramFlags) =>
      run(async () => {
        const {
          configDir,
          createClient,
          hubUrl,
          ownRuntimeToken,
          parseApprovers,
          parseChats,
          pino,
        } = await import('./telegram.js');
        const botToken = process.env.CTXBUS_TELEGRAM_TOKEN;
        if (!botToken) {
          throw new CtxbusError(
            'validation_failed',
            'no bot token: set CTXBUS_TELEGRAM_TOKEN to the token @BotFather gave you',
          );
        }
        const chats = parseChats(flags.chat, process.env.CTXBUS_TELEGRAM_CHATS);
        const approvers = parseApprovers(flags.approver, process.env.CTXBUS_TELEGRAM_APPROVERS);
        if (approvers.length === 0) {
          process.stderr.write(
            'ctxbus telegram: no --approver given: taps on Approve / Deny will be refused\n',
          );
        }
        const url = hubUrl(flags.url);
        const client = createClient({
          url,
          token: ownRuntimeToken(url, flags.token, 'telegram'),
        });
        const secret = flags.webhookSecret ?? process.env.CTXBUS_TELEGRAM_WEBHOOK_SECRET;
        if (flags.webhookUrl && !secret) {
          throw new CtxbusError(
            'validation_failed',
            '--webhook-url needs a secret: pass --webhook-secret or set CTXBUS_TELEGRAM_WEBHOOK_SECRET',
          );
        }
        const webhookPort = flags.webhookUrl ? port(flags.webhookPort) : 0;
        const { CtxbusTelegramBot } = await import('@ctxbus/telegram');
        const logger = pino(
          { base: { component: 'telegram' }, level: process.env.CTXBUS_LOG_LEVEL ?? 'info' },
          pino.destination(2),
        );
        const bot = await CtxbusTelegramBot.create({
          botToken,
          client,
          chats,
          approvers,
          statePath: flags.state ?? join(configDir(), 'telegram-state.json'),
          digestIntervalMs: minutes(flags.digestInterval),
          logger,
          ...(flags.sharedContextDir !== undefined && { sharedContextDir: flags.sharedContextDir }),
          ...(flags.apiRoot !== undefined && { apiRoot: flags.apiRoot }),
        });
        // One stop, however many ask for it (a signal, a failure, the end).
        let stopping: Promise<void> | null = null;
        const stop = () => {
          stopping ??= bot.stop();
          return stopping;
        };
        let signalled = false;
        const stopped = new Promise<void>((resolve) => {
          for (const signal of ['SIGINT', 'SIGTERM'] as const) {
            process.once(signal, () => {
              signalled = true;
              resolve();
            });
          }
        });
        // Ctrl-C while the bot is still starting (Telegram unreachable, say) stops it at once:
        // stopping aborts the requests and retries start() is waiting on.
        void stopped.then(stop);
        try {
          await bot.start();
          if (flags.webhookUrl && secret) {
            const listening = await bot.startWebhook({
              url: flags.webhookUrl,
              secret,
              host: flags.webhookHost,
              port: webhookPort,
            });
            printLine(
              `telegram bot for team ${bot.team}: webhook ${flags.webhookUrl} (listening on ${flags.webhookHost}:${listening.port}), ${chats.length} chat(s)`,
            );
          } else {
            await bot.startPolling();
            printLine(`telegram bot for team ${bot.team}: long polling, ${chats.length} chat(s)`);
          }
        } catch (error) {
          await stop();
          if (signalled) return;
          // Telegram's errors can carry the API URL, and with it the bot token: never shown.
          const code = CtxbusError.isInstance(error) ? error.code : 'unavailable';
          throw new CtxbusError(code, bot.redact(error));
        }
        try {
          await Promise.race([stopped, bot.failed]);
        } catch (error) {
          await stop();
          const code = CtxbusError.isInstance(error) ? error.code : 'unavailable';
          throw new CtxbusError(code, `telegram bot stopped: ${bot.redact(error)}`);
        }
        await stop();
      }),
    );
}
