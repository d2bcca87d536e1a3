import { randomUUID } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { call, startHubProcess, waitUntil } from '@ctxbus/test-kit';
import { describe, expect } from 'vitest';
import { because, openClawIt, useOpenClawInstalled } from './openclaw-installed.js';
import { roleText, toolNames, toolResults } from './scripted-openai-model.js';

// OpenClaw with ctxbus installed (see openclaw-installed.ts): a command handed to Claude Code's
// worker in the turn, and a turn with the hub down whose outbox reaches the hub once it is back.
// Here OpenClaw runs with tools.toolSearch false, where a plugin's tools are direct tools the
// model calls by name (openclaw.test.ts has the default, Tool Search's `tool_call` bridge).

describe(`OpenClaw with ctxbus installed, its worker and an outage${because}`, () => {
  const world = useOpenClawInstalled();

  openClawIt(
    'with tools.toolSearch false, capability_request is a direct tool: it hands a command to the worker and gets its result back in the turn',
    async () => {
      const config = world.openclaw.readConfig() as { tools?: Record<string, unknown> };
      world.openclaw.writeConfig({ ...config, tools: { ...config.tools, toolSearch: false } });
      const before = world.model.requests.length;
      world.reply = (_request, index) =>
        index === before
          ? {
              text: 'Calling it.',
              toolCall: {
                name: 'capability_request',
                arguments: {
                  title: 'Run the checks of demo',
                  argv: ['node', 'check.js'],
                  cwd: world.project,
                  waitSeconds: 90,
                },
              },
            }
          : { text: 'The checks passed.' };
      const run = await world.openclaw.agent('Run the checks of the demo project', {
        sessionId: randomUUID(),
      });
      expect(run.code, run.stderr).toBe(0);
      const first = world.model.requests[before];
      // The plugin's tool is in the request's `tools` itself, not behind the bridge.
      expect(first && toolNames(first)).toContain('capability_request');
      expect(first && toolResults(first)).toEqual([]);
      const second = world.model.requests[before + 1];
      const result = second ? toolResults(second).join('\n') : '';
      expect(result).toContain('COMPLETED');
      expect(result).toContain('42 checks passed in');
      expect(result).toContain('claude-code');
      const tasks = await call(world.hub.url, 'GET', '/api/tasks?state=COMPLETED', {
        token: world.codeToken,
      });
      const task = tasks.body.tasks.find(
        (entry: { title: string }) => entry.title === 'Run the checks of demo',
      );
      expect(task).toMatchObject({ origin: 'openclaw', targetRuntime: 'claude-code' });
      expect(run.json?.payloads).toEqual([expect.objectContaining({ text: 'The checks passed.' })]);
    },
  );

  openClawIt(
    'finishes its turn with the hub down, and the outbox reaches the hub once it is back',
    async () => {
      expect(await world.hub.stop()).toBe(0);
      const before = world.model.requests.length;
      world.reply = () => ({
        text: 'Working offline.\nDecision: offline decisions reach the hub later',
      });
      const offline = await world.openclaw.agent('Keep going', { sessionId: randomUUID() });
      expect(offline.code, offline.stderr).toBe(0);
      expect(offline.json?.payloads).toEqual([
        expect.objectContaining({ text: expect.stringContaining('Working offline.') }),
      ]);
      // Offline reads: the last good bundle (the task turn's) from the local cache, marked as
      // possibly stale.
      const first = world.model.requests[before];
      const user = first ? roleText(first, 'user') : '';
      expect(user).toContain('<team-context');
      expect(user).toMatch(/shared context from [^;]+ ago; the hub is unreachable/);
      const cache = join(world.openclaw.stateDir, 'ctxbus', 'bundle-cache.json');
      expect(statSync(cache).mode & 0o777).toBe(0o600);
      const outbox = join(world.openclaw.stateDir, 'ctxbus', 'outbox.jsonl');
      expect(existsSync(outbox)).toBe(true);

      world.hub = await startHubProcess({
        dataDir: world.hub.dataDir,
        args: ['--port', String(world.port)],
      });
      world.hub.adminToken = world.adminToken;
      world.reply = () => ({ text: 'Back online.' });
      const online = await world.openclaw.agent('And now?', { sessionId: randomUUID() });
      expect(online.code, online.stderr).toBe(0);
      await waitUntil(async () => {
        const found = await call(world.hub.url, 'GET', '/api/context?type=decision&limit=500', {
          token: world.codeToken,
        });
        return found.body.items.some(
          (item: { title: string }) => item.title === 'offline decisions reach the hub later',
        );
      }, 'the offline decision to reach the hub');
      const decisions = await call(world.hub.url, 'GET', '/api/context?type=decision&limit=500', {
        token: world.codeToken,
      });
      expect(
        decisions.body.items.filter(
          (item: { title: string }) => item.title === 'offline decisions reach the hub later',
        ),
      ).toHaveLength(1);
      expect(existsSync(outbox)).toBe(false);
    },
  );
});
