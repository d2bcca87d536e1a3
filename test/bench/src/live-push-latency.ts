// Live push into a running Claude Code session (`ctxbus install claude-code --live`): the real
// Claude Code CLI in one `claude -p` turn of tool calls, its model played by the scripted
// Messages API server, against a real hub process. Each tool call runs a second (work going on);
// while it runs, another runtime writes a blocking item. Measured per item: write -> Claude
// Code's inbox (the live process's delivery), write -> the model request that carries it, and
// tool call returned -> that request (target p99 <= 1 s), and whether it rode in the request
// right after the running tool call (the same turn's next step). Every other tool call has no
// item: its returned -> next request is Claude Code's own pace (the PostToolUse hooks run, the
// request is built) without a push, the baseline the push's figure compares with.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { HubProcess } from '@ctxbus/test-kit';
import { call, removeDir, runCli, runtimeToken, tempDir, waitUntil } from '@ctxbus/test-kit';
import type { MessagesRequest } from '@ctxbus/test-kit/scripted-model';
import { requestText, startScriptedModel } from '@ctxbus/test-kit/scripted-model';
import type { Row } from './stats.ts';
import { ms, percentile } from './stats.ts';

const here = dirname(fileURLToPath(import.meta.url));
const CLAUDE = resolve(here, '../node_modules/.bin/claude');
/** How long each tool call works (the window in which the item is written). */
const TOOL_SECONDS = 1;

const toolCalls = (request: MessagesRequest) =>
  request.messages.filter(
    (message) =>
      message.role === 'assistant' &&
      Array.isArray(message.content) &&
      (message.content as { type: string }[]).some((block) => block.type === 'tool_use'),
  ).length;

/** Tool call `step`: says it runs, works TOOL_SECONDS, records when it returned (ms). */
const toolCommand = (dir: string, step: number) =>
  `touch ${dir}/running-${step}; sleep ${TOOL_SECONDS}; date +%s%3N > ${dir}/returned-${step}; echo step-${step}-done`;

export async function benchLivePush(hub: HubProcess, rounds: number): Promise<Row[]> {
  const code = await runtimeToken(hub, 'bench', 'claude-code');
  const chat = await runtimeToken(hub, 'bench', 'openclaw');
  const home = mkdtempSync(join(tmpdir(), 'ctxbus-bench-live-home-'));
  const dir = tempDir('ctxbus-bench-live-');
  const arrivals: { at: number; text: string; index: number }[] = [];
  const model = await startScriptedModel((request, index) => {
    arrivals.push({ at: Date.now(), text: requestText(request), index });
    const step = toolCalls(request);
    if (step >= 2 * rounds) return { text: 'done' };
    return {
      toolUse: {
        name: 'Bash',
        input: { command: toolCommand(dir, step + 1), description: 'work' },
      },
    };
  });
  try {
    const installed = await runCli(
      ['install', 'claude-code', '--project', dir, '--url', hub.url, '--token', code, '--live'],
      { env: { HOME: home } },
    );
    if (installed.code !== 0) throw new Error(`install --live failed: ${installed.stderr}`);
    const session = randomUUID();
    const child = spawn(
      CLAUDE,
      ['-p', 'Work through the steps.', '--session-id', session, '--allowedTools', 'Bash'],
      {
        cwd: dir,
        env: {
          PATH: process.env.PATH,
          HOME: home,
          ANTHROPIC_BASE_URL: model.url,
          ANTHROPIC_API_KEY: 'sk-ant-bench-scripted-model',
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
          DISABLE_TELEMETRY: '1',
        },
        stdio: 'ignore',
      },
    );
    const exited = new Promise<number | null>((done) => child.once('exit', done));
    const liveLog = join(home, '.local/state/ctxbus/claude-code/live', `${session}.log`);
    const log = () => (existsSync(liveLog) ? readFileSync(liveLog, 'utf8') : '');
    const written: { step: number; seq: number; marker: string; at: number }[] = [];
    for (let step = 1; step <= 2 * rounds; step += 2) {
      await waitUntil(
        () => existsSync(join(dir, `running-${step}`)) && log().includes('started'),
        `tool call ${step} running with the live push started`,
      );
      const marker = `bench-live-${step}-${randomUUID().slice(0, 8)}`;
      const at = Date.now();
      const response = await call(hub.url, 'POST', '/api/context', {
        token: chat,
        body: { type: 'alert', title: `Blocker ${marker}`, urgency: 'blocking' },
      });
      if (response.status !== 201) throw new Error(`write failed: ${response.status}`);
      written.push({ step, seq: response.body.items[0].seq, marker, at });
    }
    if ((await exited) !== 0) throw new Error('claude -p failed');
    await waitUntil(() => log().includes('ended: '), 'the live push to end with the session');
    return report(written, arrivals, dir, log(), rounds);
  } finally {
    await model.close();
    removeDir(home);
    removeDir(dir);
  }
}

function report(
  written: { step: number; seq: number; marker: string; at: number }[],
  arrivals: { at: number; text: string; index: number }[],
  dir: string,
  liveLog: string,
  rounds: number,
): Row[] {
  const toInbox: number[] = [];
  const toRequest: number[] = [];
  const afterReturn: number[] = [];
  let sameStep = 0;
  for (const item of written) {
    const delivered = liveLog
      .split('\n')
      .find((line) => line.includes(`delivered seq ${item.seq} `));
    if (delivered) toInbox.push(Date.parse(delivered.slice(0, 24)) - item.at);
    const request = arrivals.find((arrival) => arrival.text.includes(item.marker));
    if (!request) continue;
    toRequest.push(request.at - item.at);
    const returned = Number(readFileSync(join(dir, `returned-${item.step}`), 'utf8'));
    afterReturn.push(request.at - returned);
    // The request right after tool call `step` carries its result: the item rode in it.
    if (
      request.text.includes(`step-${item.step}-done`) &&
      !request.text.includes(`step-${item.step + 1}-done`)
    ) {
      sameStep++;
    }
  }
  // The steps without an item: returned -> the request that carries their result.
  const baseline: number[] = [];
  for (let step = 2; step <= 2 * rounds; step += 2) {
    const returned = Number(readFileSync(join(dir, `returned-${step}`), 'utf8'));
    const request = arrivals.find((arrival) => arrival.text.includes(`step-${step}-done`));
    if (request) baseline.push(request.at - returned);
  }
  const p99 = percentile(afterReturn, 99);
  const [one, five] = loadavg();
  return [
    {
      section: 'live',
      metric: `write -> Claude Code inbox p50 / p99 (${toInbox.length} items)`,
      value: `${ms(percentile(toInbox, 50))} / ${ms(percentile(toInbox, 99))}`,
    },
    {
      section: 'live',
      metric: `write -> model request p50 / p99 (written during a ${TOOL_SECONDS} s tool call)`,
      value: `${ms(percentile(toRequest, 50))} / ${ms(percentile(toRequest, 99))}`,
    },
    {
      section: 'live',
      metric: 'tool call returned -> model request with the item p50 / p99',
      value: `${ms(percentile(afterReturn, 50))} / ${ms(p99)}`,
      target: 'p99 <= 1 s',
      ok: afterReturn.length === written.length && p99 <= 1_000,
    },
    {
      section: 'live',
      metric: 'baseline: tool call returned -> next model request, no item, p50 / p99',
      value: `${ms(percentile(baseline, 50))} / ${ms(percentile(baseline, 99))}`,
    },
    {
      section: 'live',
      metric: 'items in the request right after the running tool call (same turn)',
      value: `${sameStep} / ${written.length}`,
      target: '100%',
      ok: sameStep === written.length,
    },
    {
      section: 'live',
      metric: 'machine load (1 / 5 min)',
      value: `${one?.toFixed(2)} / ${five?.toFixed(2)}`,
    },
  ];
}
