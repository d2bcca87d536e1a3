import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { registerCtxbus } from './register-plugin.js';
import type { TestHub } from './test-host.js';
import { closedPortUrl, recordingHost, startTestHub } from './test-host.js';

let hub: TestHub;
let token: string;
let root: string;
let dir: string;
const now = () => new Date('2026-11-25T09:00:00Z');

beforeAll(async () => {
  hub = await startTestHub();
  token = await hub.mint('openclaw');
});
afterAll(() => hub.close());
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'ctxbus-openclaw-shared-'));
  dir = join(root, 'shared-context');
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

function plugin(
  url: string,
  extra: Record<string, unknown> = {},
  runtime?: Parameters<typeof recordingHost>[1],
) {
  const host = recordingHost(
    {
      url,
      token,
      stateDir: join(root, 'state'),
      sharedContextEnabled: true,
      sharedContextDir: dir,
      ...extra,
    },
    runtime,
  );
  registerCtxbus(host.api, { env: {}, now });
  return host;
}

describe('the shared-context directory in OpenClaw', () => {
  it('is created at start, never overwriting, and stays off unless enabled', () => {
    const off = recordingHost({ url: hub.url, token, stateDir: join(root, 'state') });
    registerCtxbus(off.api, { env: {} });
    expect(off.toolGroups).toHaveLength(1);
    expect(off.services).toEqual([]);

    plugin(hub.url);
    expect(existsSync(join(dir, 'priorities.md'))).toBe(true);
    writeFileSync(join(dir, 'priorities.md'), '## CANONICAL (curator)\n\n- Ship the billing fix\n');
    const host = plugin(hub.url);
    expect(readFileSync(join(dir, 'priorities.md'), 'utf8')).toContain('Ship the billing fix');
    expect(host.services.map((service) => service.id)).toEqual(['ctxbus-shared-context-bridge']);
  });

  it('injects the priorities, capped, even when the hub is down', async () => {
    plugin(hub.url);
    writeFileSync(
      join(dir, 'priorities.md'),
      `## CANONICAL (curator)\n\n- Ship the billing fix\n${'- filler priority line\n'.repeat(400)}`,
    );
    const host = plugin(await closedPortUrl(), {
      sharedContextMaxInjectChars: 500,
    });
    const result = await host.promptBuild({ agentId: 'main' });
    const text = result?.prependContext ?? '';
    expect(text).toContain('Ship the billing fix');
    expect(text.length).toBeLessThan(700);
  });

  it('writes outputs and feedback through the policy, as the calling agent', async () => {
    const host = plugin(hub.url);
    const tools = new Map(host.tools({ agentId: 'research' }).map((tool) => [tool.name, tool]));
    const written = await tools.get('shared_context_write_output')?.execute('call-1', {
      title: 'Competitor scan',
      body: 'Acme Corp raised prices.',
      entities: ['Acme Corp'],
    });
    const path = (written?.details as { path: string } | undefined)?.path ?? '';
    expect(path).toBe('agent-outputs/research/2026-11-25/competitor-scan.md');
    expect(readFileSync(join(dir, path), 'utf8')).toContain('Acme Corp raised prices.');
    await tools.get('shared_context_feedback')?.execute('call-2', {
      verdict: 'rejected',
      subject: 'Daily digest format',
      reason: 'too long',
    });
    const inbox = readFileSync(join(dir, 'feedback', 'inbox.jsonl'), 'utf8');
    expect(JSON.parse(inbox.trim())).toMatchObject({ agent: 'research', verdict: 'rejected' });
    await expect(
      tools.get('shared_context_feedback')?.execute('call-3', { verdict: 'maybe', subject: 'x' }),
    ).rejects.toThrow(/shared_context_feedback failed: invalid input: verdict/);
  });

  it('honours an explicit agent (seed 001) where the session names none or the same one', async () => {
    const host = plugin(hub.url);
    const write = (agentId: string | undefined, input: Record<string, unknown>) => {
      const [tool] = host
        .tools(agentId === undefined ? {} : { agentId })
        .filter((candidate) => candidate.name === 'shared_context_write_output');
      return tool?.execute('call-agent', { title: 'Scan', body: 'Acme.', ...input });
    };
    const path = async (result: ReturnType<typeof write>) =>
      ((await result)?.details as { path: string } | undefined)?.path;
    // No agent id from OpenClaw: the explicit one is who writes (before: always "main").
    expect(await path(write(undefined, { agent: 'scout' }))).toBe(
      'agent-outputs/scout/2026-11-25/scan.md',
    );
    expect(await path(write(undefined, {}))).toBe('agent-outputs/main/2026-11-25/scan.md');
    expect(await path(write('research', { agent: 'research', title: 'Own' }))).toBe(
      'agent-outputs/research/2026-11-25/own.md',
    );
    // Another agent's folder is not this session's to write.
    await expect(write('research', { agent: 'sales' })).rejects.toThrow(
      /writes as agent "research".*"sales" is refused/,
    );
    expect(existsSync(join(dir, 'agent-outputs', 'sales'))).toBe(false);
    await expect(write('research', { agent: '../etc' })).rejects.toThrow(/invalid input: agent/);
  });

  it('redacts secrets before they touch the directory, and a retried write stays one file', async () => {
    const host = plugin(hub.url);
    const tools = new Map(host.tools({ agentId: 'ops' }).map((tool) => [tool.name, tool]));
    const secret = 'ghp_abcdefghijklmnopqrstuvwxyz0123456789';
    const input = { title: 'Deploy notes', body: `Used token ${secret} for the deploy.` };
    const first = await tools.get('shared_context_write_output')?.execute('call-s1', input);
    const again = await tools.get('shared_context_write_output')?.execute('call-s2', input);
    const path = (first?.details as { path: string } | undefined)?.path ?? '';
    expect((again?.details as { path: string; created: boolean } | undefined)?.path).toBe(path);
    const text = readFileSync(join(dir, path), 'utf8');
    expect(text).not.toContain(secret);
    expect(text).toContain('[REDACTED:');
    await tools.get('shared_context_feedback')?.execute('call-s3', {
      verdict: 'rejected',
      subject: 'Deploy',
      reason: `never paste ${secret}`,
    });
    const inbox = readFileSync(join(dir, 'feedback', 'inbox.jsonl'), 'utf8');
    expect(inbox).not.toContain(secret);
    expect(JSON.parse(inbox.trim()).reason).toMatch(/never paste \[REDACTED:/);
  });

  it('curates and finds cross-signals from two agents’ outputs', async () => {
    const host = plugin(hub.url);
    for (const agent of ['research', 'sales']) {
      const [write] = host
        .tools({ agentId: agent })
        .filter((tool) => tool.name === 'shared_context_write_output');
      await write?.execute(`call-${agent}`, {
        title: `${agent} notes`,
        body: 'Talked about the renewal.',
        entities: ['Globex'],
      });
    }
    const tools = new Map(host.tools({ agentId: 'curator' }).map((tool) => [tool.name, tool]));
    const signals = await tools.get('shared_context_cross_signals_run')?.execute('call-x', {});
    expect(signals?.content[0]?.text).toMatch(/Globex: research, sales/);
    const curated = await tools.get('shared_context_curate_daily')?.execute('call-c', {});
    const roundtable = (curated?.details as { roundtable: string } | undefined)?.roundtable ?? '';
    expect(readFileSync(join(dir, roundtable), 'utf8')).toContain('Globex');
  });

  it("merges fuzzy duplicates with the gateway's own model only when the semantic enhancer is on", async () => {
    const asked: { systemPrompt?: string; content: string; purpose?: string }[] = [];
    const runtime = {
      llm: {
        async complete(params: {
          messages: { role: 'user'; content: string }[];
          systemPrompt?: string;
          purpose?: string;
        }) {
          asked.push({
            content: params.messages[0]?.content ?? '',
            ...(params.systemPrompt !== undefined && { systemPrompt: params.systemPrompt }),
            ...(params.purpose !== undefined && { purpose: params.purpose }),
          });
          const merges = [{ into: 'acme corp', from: ['acme'], reason: 'the same company' }];
          return { text: JSON.stringify({ merges }), model: 'gateway-model' };
        },
      },
    };
    const outputs = async (host: ReturnType<typeof plugin>) => {
      for (const [agent, entity] of [
        ['research', 'Acme Corp'],
        ['sales', 'Acme'],
      ] as const) {
        const [write] = host
          .tools({ agentId: agent })
          .filter((tool) => tool.name === 'shared_context_write_output');
        await write?.execute(`call-${agent}`, { title: 'notes', body: 'x', entities: [entity] });
      }
      const [run] = host
        .tools({ agentId: 'curator' })
        .filter((tool) => tool.name === 'shared_context_cross_signals_run');
      return run?.execute('call-run', {});
    };
    // Off by default: the host's model is never asked, and the two names stay apart.
    const off = await outputs(plugin(hub.url, {}, runtime));
    expect(asked).toEqual([]);
    expect(off?.content[0]?.text).toMatch(/^0 cross-signal/);

    rmSync(dir, { recursive: true, force: true });
    const on = await outputs(
      plugin(
        hub.url,
        { crossSignalsSemanticEnabled: true, crossSignalsSemanticTimeoutMs: 5_000 },
        runtime,
      ),
    );
    expect(asked).toHaveLength(1);
    expect(asked[0]?.purpose).toBe('ctxbus.cross-signals');
    expect(asked[0]?.systemPrompt).toMatch(/merge/i);
    expect(JSON.parse(asked[0]?.content ?? '{}')).toEqual({ terms: ['acme', 'acme corp'] });
    expect(on?.content[0]?.text).toMatch(/acme corp: research, sales/i);

    // On, but this OpenClaw has no model helper: deterministic, with a warning in the log.
    const bare = plugin(hub.url, { crossSignalsSemanticEnabled: true });
    expect(bare.logs.some((line) => /offers plugins no model/.test(line.message))).toBe(true);
  });
});
