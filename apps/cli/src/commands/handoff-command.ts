import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createClient } from '@ctxbus/client';
import type { ContextItemInput } from '@ctxbus/core/contract';
import { CtxbusError } from '@ctxbus/core/contract';
import type { Handoff, HandoffPaths } from '@ctxbus/handoff';
import {
  handoffPaths,
  heartbeat,
  readHandoff,
  readHistory,
  resumeNote,
  switchModel,
} from '@ctxbus/handoff';
import type { Command } from 'commander';
import { hubUrl, runtimeToken } from '../hub-target.js';
import { printJson, printLine } from '../output.js';

// `ctxbus handoff ...`: seed 003's model-switch handoff in an agent's workspace
// (`.context-bus/`), optionally published to the hub so the other runtimes see the switch.

interface CommonOptions {
  workspace?: string;
  json?: boolean;
  url?: string;
  token?: string;
  publish?: boolean;
}

const WORKSPACE_HELP =
  "the agent's workspace, holding .context-bus/ (default: the current directory)";

function workspaceOf(options: CommonOptions): string {
  return resolve(options.workspace ?? process.cwd());
}

const HEARTBEAT_RULES_MARKER = '<!-- ctxbus handoff rules -->';
const HEARTBEAT_RULES = `${HEARTBEAT_RULES_MARKER}
## Context Bus (model-switch handoff)

- At session start, read \`.context-bus/handoff.json\`. If \`model.previous\` is set, you are
  continuing another model's work: read \`.context-bus/rolling-summary.md\` and say
  "Continuing from <previous>'s work on <task>".
- After each meaningful step, record it: \`ctxbus handoff heartbeat --model <you> --action "..."\`
  (with \`--next\`, \`--decision\`, \`--blocker\`, \`--usage\` when they change).
- Never edit \`.context-bus/\` by hand: every file there is checksummed.
`;

/** Creates `.context-bus/` and puts the rules in HEARTBEAT.md (added once, never replacing it). */
function init(workspace: string): {
  kind: 'openclaw' | 'project';
  heartbeatFile: string;
  added: boolean;
} {
  const openclaw =
    existsSync(join(workspace, 'AGENTS.md')) && existsSync(join(workspace, 'HEARTBEAT.md'));
  const heartbeatFile = join(workspace, 'HEARTBEAT.md');
  const current = existsSync(heartbeatFile) ? readFileSync(heartbeatFile, 'utf8') : null;
  let added = false;
  if (current === null) {
    writeFileSync(heartbeatFile, `# Heartbeat\n\n${HEARTBEAT_RULES}`);
    added = true;
  } else if (!current.includes(HEARTBEAT_RULES_MARKER)) {
    writeFileSync(heartbeatFile, `${current.replace(/\n*$/, '\n\n')}${HEARTBEAT_RULES}`);
    added = true;
  }
  return { kind: openclaw ? 'openclaw' : 'project', heartbeatFile, added };
}

/** The handoff as a status item keyed per workspace: the newest supersedes the last. */
function handoffItem(workspace: string, handoff: Handoff, event: string): ContextItemInput {
  const switched = event === 'switch' && handoff.model.previous;
  const note = resumeNote(handoff);
  return {
    type: 'status',
    title: switched
      ? `Agent switched from ${handoff.model.previous} to ${handoff.model.current}: ${handoff.task.description || 'no task'}`
      : `${handoff.model.current} working on ${handoff.task.description || 'no task'}`,
    content: [
      note ??
        `Model ${handoff.model.current}${handoff.model.usage_percent !== null ? ` at ${handoff.model.usage_percent}% of its limit` : ''}.`,
      handoff.context.next_steps.length ? `Next: ${handoff.context.next_steps.join('; ')}` : '',
    ]
      .filter(Boolean)
      .join('\n'),
    key: `handoff/${
      workspace
        .replace(/[^A-Za-z0-9._-]+/g, '_')
        .replace(/^_+|_+$/g, '')
        .slice(-150) || 'workspace'
    }`,
    relevanceTags: ['handoff', handoff.model.current],
    ...(switched && { urgency: 'attention' as const }),
  };
}

/** Publishes when asked (--publish, --url or --token); a hub that fails is a warning only. */
async function publish(
  options: CommonOptions,
  workspace: string,
  handoff: Handoff,
  event: string,
): Promise<void> {
  if (!options.publish && !options.url && !options.token) return;
  try {
    const url = hubUrl(options.url);
    await createClient({ url, token: runtimeToken(url, options.token) }).write(
      handoffItem(workspace, handoff, event),
    );
  } catch (error) {
    process.stderr.write(
      `ctxbus: warning: the handoff is saved, but not published to the hub: ${(error as Error).message}\n`,
    );
  }
}

function list(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

function percent(value: string): number {
  const number = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value) || number > 100) {
    throw new CtxbusError(
      'validation_failed',
      `--usage must be a percentage 0-100 (got "${value}")`,
    );
  }
  return number;
}

function minutes(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) {
    throw new CtxbusError('validation_failed', `--max-age must be whole minutes (got "${value}")`);
  }
  return Number(value);
}

function describe(paths: HandoffPaths, handoff: Handoff, now: Date): string[] {
  const age = Math.round((now.getTime() - Date.parse(handoff.timestamp)) / 60_000);
  return [
    `${paths.handoff}: sequence ${handoff.sequence}, ${age} min old, checksum ok, ${handoff.handoff_ready ? 'ready' : 'NOT ready'}`,
    `model: ${handoff.model.current}${handoff.model.usage_percent !== null ? ` (${handoff.model.usage_percent}%)` : ''}${handoff.model.previous ? `, previously ${handoff.model.previous}${handoff.model.switch_reason ? ` (${handoff.model.switch_reason})` : ''}` : ''}`,
    `task: ${handoff.task.description || '-'} [${handoff.task.status}]`,
    ...handoff.context.next_steps.map((step) => `next: ${step}`),
    ...handoff.context.blockers.map((blocker) => `blocker: ${blocker}`),
  ];
}

export function registerHandoff(
  program: Command,
  run: (action: () => Promise<void>) => Promise<void>,
) {
  const handoff = program
    .command('handoff')
    .description(
      "seed 003's model-switch handoff: an agent's state in .context-bus/ (checksummed, sequenced, atomic), so another model resumes where one stopped",
    )
    .addHelpText(
      'after',
      `
Files (in the workspace): .context-bus/handoff.json (schema v2), rolling-summary.md,
history.jsonl (append-only), .lock. A file changed by hand fails its checksum and is refused.

Examples:
  ctxbus handoff init
  ctxbus handoff heartbeat --model opus --usage 87 --action "Pushed the fix" --next "Review"
  ctxbus handoff switch --to codex --reason "opus at 95%"
  ctxbus handoff status`,
    );

  handoff
    .command('init')
    .description(
      'create .context-bus/ and add the handoff rules to HEARTBEAT.md (never replacing it)',
    )
    .option('--workspace <dir>', WORKSPACE_HELP)
    .action((options: CommonOptions) =>
      run(async () => {
        const workspace = workspaceOf(options);
        const paths = handoffPaths(workspace);
        const result = init(workspace);
        mkdirSync(paths.dir, { recursive: true });
        printLine(
          `${result.kind === 'openclaw' ? 'OpenClaw agent workspace' : 'project'} ${workspace}: ${paths.dir} ready; ${result.added ? `rules added to ${result.heartbeatFile}` : `${result.heartbeatFile} already has the rules`}`,
        );
      }),
    );

  handoff
    .command('status')
    .description('the handoff: model, task, age, whether it is ready; exit 4 when there is none')
    .option('--workspace <dir>', WORKSPACE_HELP)
    .option('--json', 'the handoff and its last history entries as JSON')
    .action((options: CommonOptions) =>
      run(async () => {
        const paths = handoffPaths(workspaceOf(options));
        const current = readHandoff(paths);
        if (!current) {
          throw new CtxbusError(
            'not_found',
            `no handoff in ${paths.dir} (ctxbus handoff heartbeat)`,
          );
        }
        if (options.json)
          return printJson({ handoff: current, history: readHistory(paths).slice(-10) });
        for (const line of describe(paths, current, new Date())) printLine(line);
      }),
    );

  handoff
    .command('heartbeat')
    .description('record where the work stands (creates the handoff the first time)')
    .requiredOption('--model <name>', 'the model writing (opus, codex, ...)')
    .option('--usage <percent>', "the model's usage of its limit (0-100)")
    .option('--action <text>', 'something just done (repeatable; the last five are kept)', list)
    .option('--next <text>', 'a next step (repeatable; replaces the list)', list)
    .option('--decision <text>', 'a decision (repeatable; replaces the list)', list)
    .option('--blocker <text>', 'a blocker (repeatable; replaces the list)', list)
    .option('--task <text>', 'what the agent works on')
    .option('--status <text>', 'its status (default in_progress)')
    .option('--project <dir>', 'the project it is in')
    .option('--file <path>', 'a file touched (repeatable)', list)
    .option('--not-ready', 'mark the state incomplete for another model')
    .option('--force', 'start over when the file fails its checks')
    .option('--workspace <dir>', WORKSPACE_HELP)
    .option('--publish', 'also write it to the hub as a status item (also on --url or --token)')
    .option('--url <url>', 'hub URL (default: $CTXBUS_URL, else the saved hub)')
    .option('--token <token>', 'runtime token (default: $CTXBUS_TOKEN, else the saved one)')
    .option('--json', 'print the handoff as JSON')
    .action(
      (
        options: CommonOptions & {
          model: string;
          usage?: string;
          action?: string[];
          next?: string[];
          decision?: string[];
          blocker?: string[];
          task?: string;
          status?: string;
          project?: string;
          file?: string[];
          notReady?: boolean;
          force?: boolean;
        },
      ) =>
        run(async () => {
          const workspace = workspaceOf(options);
          const written = await heartbeat(
            handoffPaths(workspace),
            {
              model: options.model,
              ...(options.usage !== undefined && { usagePercent: percent(options.usage) }),
              ...(options.action && { actions: options.action }),
              ...(options.next && { nextSteps: options.next }),
              ...(options.decision && { decisions: options.decision }),
              ...(options.blocker && { blockers: options.blocker }),
              ...((options.task || options.status || options.project) && {
                task: {
                  ...(options.task && { description: options.task }),
                  ...(options.status && { status: options.status }),
                  ...(options.project && { project: options.project }),
                },
              }),
              ...(options.file && { files: options.file }),
              ready: !options.notReady,
            },
            { ...(options.force && { force: true }) },
          );
          await publish(options, workspace, written, 'heartbeat');
          if (options.json) return printJson(written);
          printLine(`heartbeat ${written.sequence} saved (${written.model.current})`);
        }),
    );

  handoff
    .command('switch')
    .description(
      'move the agent to another model: refuses a damaged or stale handoff unless --force; warns when it is not ready',
    )
    .requiredOption('--to <model>', 'the model to switch to')
    .requiredOption('--reason <text>', 'why (a limit reached, a failure, ...)')
    .option('--max-age <minutes>', 'refuse a handoff older than this (default 30)')
    .option('--force', 'switch anyway')
    .option('--workspace <dir>', WORKSPACE_HELP)
    .option('--publish', 'also tell the hub (also on --url or --token)')
    .option('--url <url>', 'hub URL (default: $CTXBUS_URL, else the saved hub)')
    .option('--token <token>', 'runtime token (default: $CTXBUS_TOKEN, else the saved one)')
    .option('--json', 'print the result as JSON')
    .action(
      (options: CommonOptions & { to: string; reason: string; maxAge?: string; force?: boolean }) =>
        run(async () => {
          const workspace = workspaceOf(options);
          const paths = handoffPaths(workspace);
          const result = await switchModel(paths, {
            to: options.to,
            reason: options.reason,
            ...(options.maxAge !== undefined && { maxAgeMs: minutes(options.maxAge) * 60_000 }),
            ...(options.force && { force: true }),
          });
          for (const warning of result.warnings)
            process.stderr.write(`ctxbus: warning: ${warning}\n`);
          await publish(options, workspace, result.handoff, 'switch');
          if (options.json) return printJson(result);
          printLine(resumeNote(result.handoff) ?? `switched to ${result.handoff.model.current}`);
        }),
    );
}
