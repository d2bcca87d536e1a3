import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { call, openStream } from '@ctxbus/test-kit';
import { describe, expect } from 'vitest';
import { OPENCLAW_BIN } from './openclaw-harness.js';
import {
  because,
  callTool,
  openClawIt,
  PLUGIN_DIR,
  useOpenClawInstalled,
} from './openclaw-installed.js';
import { roleText, toolResults } from './scripted-openai-model.js';

// OpenClaw with ctxbus installed (see openclaw-installed.ts): the plugin loads, the team's
// context reaches the model, the model writes through the plugin's tool, uninstall is clean.
// The worker and hub-outage turns are in openclaw-offline.test.ts, run beside this file.

describe(`OpenClaw with ctxbus installed${because}`, () => {
  const world = useOpenClawInstalled();

  openClawIt(
    'loads the plugin with its hooks and tools; installing again changes nothing',
    async () => {
      const config = world.openclaw.readConfig() as {
        plugins: { load: { paths: string[] }; entries: Record<string, unknown> };
        mcp: { servers: Record<string, unknown> };
      };
      expect(config.plugins.load.paths).toContain(PLUGIN_DIR);
      expect(config.plugins.entries.ctxbus).toMatchObject({
        enabled: true,
        hooks: { allowConversationAccess: true },
        config: { url: world.hub.url, token: world.clawToken },
      });
      expect(config.mcp.servers.ctxbus).toMatchObject({
        url: `${world.hub.url}/mcp`,
        transport: 'streamable-http',
      });
      const { run, json } = await world.openclaw.inspectPlugin('ctxbus');
      expect(run.code, run.stderr).toBe(0);
      const inspected = json as {
        plugin: { status: string; toolNames: string[] };
        typedHooks: { name: string }[];
        diagnostics: { message: string }[];
      };
      expect(inspected.plugin.status).toBe('loaded');
      expect(inspected.plugin.toolNames).toEqual(
        expect.arrayContaining(['context_write', 'memory_query', 'capability_request']),
      );
      expect(inspected.typedHooks.map((hook) => hook.name).sort()).toEqual([
        'agent_end',
        'before_prompt_build',
      ]);
      expect(inspected.diagnostics).toEqual([]);

      const again = await world.install();
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toContain('nothing changed');
    },
  );

  openClawIt(
    'puts what Claude Code wrote into the request OpenClaw sends the model, and records the decision it states',
    async () => {
      const written = await call(world.hub.url, 'POST', '/api/context', {
        token: world.codeToken,
        body: { type: 'decision', title: 'Release frozen until Friday (marker c41e)' },
      });
      expect(written.status).toBe(201);
      const before = world.model.requests.length;
      world.reply = () => ({
        text: 'Noted.\nDecision: no deploys before the freeze ends (marker c41e)',
      });
      const run = await world.openclaw.agent('What is the team up to?', {
        sessionId: randomUUID(),
      });
      expect(run.code, run.stderr).toBe(0);
      expect(run.json?.payloads).toEqual([expect.objectContaining({ text: expect.any(String) })]);
      const first = world.model.requests[before];
      expect(first && roleText(first, 'user')).toContain(
        'Release frozen until Friday (marker c41e)',
      );
      expect(first && roleText(first, 'user')).toContain('<team-context source="ctxbus">');
      expect(first && roleText(first, 'system')).toContain('capability_request');

      const decisions = await call(
        world.hub.url,
        'GET',
        '/api/context?type=decision&runtime=openclaw',
        {
          token: world.codeToken,
        },
      );
      const recorded = decisions.body.items.find(
        (item: { title: string }) =>
          item.title === 'no deploys before the freeze ends (marker c41e)',
      );
      expect(recorded?.source).toMatchObject({ runtime: 'openclaw', agentId: 'main' });
    },
  );

  openClawIt(
    'runs context_write for the model; a live subscriber standing in for Claude Code gets the item',
    async () => {
      const subscriber = openStream(world.hub.url, world.codeToken, { query: 'tags=ops' });
      await subscriber.ready;
      const title = 'Disk on build-2 is 95% full (marker 77b0)';
      const before = world.model.requests.length;
      world.reply = (_request, index) =>
        index === before
          ? callTool('context_write', {
              type: 'status',
              title,
              tags: ['ops'],
              urgency: 'attention',
            })
          : { text: 'Told the team.' };
      const run = await world.openclaw.agent('Tell the team the disk is nearly full', {
        sessionId: randomUUID(),
      });
      expect(run.code, run.stderr).toBe(0);
      const second = world.model.requests[before + 1];
      expect(second && toolResults(second).join('\n')).toContain(title);
      await subscriber.waitFor(
        () => subscriber.items().some((event) => event.item.title === title),
        15_000,
      );
      const event = subscriber.items().find((entry) => entry.item.title === title);
      expect(event?.item.source).toMatchObject({ runtime: 'openclaw', agentId: 'main' });
      subscriber.close();
    },
  );

  openClawIt('uninstall removes exactly what install added', async () => {
    const removed = await world.ctxbus([
      'install',
      'openclaw',
      '--uninstall',
      '--openclaw',
      OPENCLAW_BIN,
    ]);
    expect(removed.code, removed.stderr).toBe(0);
    const config = world.openclaw.readConfig() as {
      plugins?: { load?: { paths?: string[] }; entries?: Record<string, unknown> };
      mcp?: { servers?: Record<string, unknown> };
      models?: unknown;
    };
    expect(config.plugins?.load?.paths ?? []).not.toContain(PLUGIN_DIR);
    expect(config.plugins?.entries?.ctxbus).toBeUndefined();
    expect(config.mcp?.servers?.ctxbus).toBeUndefined();
    expect(config.models).toBeDefined(); // the user's own settings stay
    expect(existsSync(join(PLUGIN_DIR, 'dist', 'index.js'))).toBe(true);
  });
});
