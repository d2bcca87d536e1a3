import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { removeDir, tempDir } from '@ctxbus/test-kit';
import { afterAll, describe, expect, it } from 'vitest';
import { adoptHandoff, heartbeat, switchModel } from './handoff-ops.js';
import { handoffPaths } from './handoff-paths.js';
import { pendingResume } from './resume-pending.js';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) removeDir(dir);
});

describe('pendingResume (the light reader for hooks)', () => {
  it('gives the note once per switch, checks the checksum, and reports a damaged file', async () => {
    const workspace = tempDir('ctxbus-handoff-resume-');
    dirs.push(workspace);
    const paths = handoffPaths(workspace);
    expect(pendingResume(workspace, 0)).toBeNull();
    await heartbeat(paths, {
      model: 'opus',
      task: { description: 'Billing' },
      nextSteps: ['Backfill'],
    });
    expect(pendingResume(workspace, 0)).toBeNull(); // no switch yet
    await switchModel(paths, { to: 'codex', reason: 'opus at 95%' });
    const pending = pendingResume(workspace, 0);
    expect(pending).toEqual({
      note: "Continuing from opus's work on Billing (switched: opus at 95%).\nNext steps:\n- Backfill",
      switchSequence: 2,
    });
    expect(pendingResume(workspace, 2)).toBeNull(); // told already
    await heartbeat(paths, { model: 'codex', actions: ['Backfilled'] });
    expect(pendingResume(workspace, 2)).toBeNull(); // a heartbeat is not a new switch
    const text = readFileSync(paths.handoff, 'utf8');
    writeFileSync(paths.handoff, text.replace('"Billing"', '"Something else"'));
    expect(pendingResume(workspace, 0)).toEqual({
      problem: `${paths.handoff} fails its checksum`,
      switchSequence: 2,
    });
  });
});

describe("pendingResume of a switch seed 003's own scripts made (no ctxbus history)", () => {
  it('reads model.previous as the seed says: the file fails its checksum until adopted, then the note comes once', async () => {
    const workspace = tempDir('ctxbus-handoff-seed-');
    dirs.push(workspace);
    const paths = handoffPaths(workspace);
    mkdirSync(paths.dir, { recursive: true });
    const content = {
      schema_version: 2,
      timestamp: '2026-02-01T15:15:00+05:30',
      author: 'opus',
      handoff_ready: true,
      model: { current: 'codex', previous: 'opus', usage_percent: 96, switch_reason: null },
      task: { description: 'Billing', status: 'in_progress', project: null },
      context: { recent_actions: [], decisions: [], next_steps: ['Backfill'], blockers: [] },
      files_touched: [],
    };
    writeFileSync(
      paths.handoff,
      JSON.stringify({ ...content, sequence: 47, checksum: 'sha256:abc123...' }),
    );
    expect(pendingResume(workspace, 0)).toEqual({
      problem: `${paths.handoff} fails its checksum`,
      switchSequence: 47,
    });
    expect(pendingResume(workspace, 47)).toBeNull(); // reported once
    await adoptHandoff(paths);
    expect(pendingResume(workspace, 47)).toEqual({
      note: "Continuing from opus's work on Billing.\nNext steps:\n- Backfill",
      switchSequence: 48,
    });
    expect(pendingResume(workspace, 48)).toBeNull();
    await heartbeat(paths, { model: 'codex', actions: ['Backfilled'] });
    expect(pendingResume(workspace, 48)).toBeNull(); // a heartbeat is not a new switch
  });
});

// Hooks import @ctxbus/handoff/light on every prompt: it must load neither zod, YAML nor the
// tokenizer (core's light entry only), directly or through a shared chunk.
describe('@ctxbus/handoff/light', () => {
  it('loads no zod, YAML, tokenizer or core contract', () => {
    const seen = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const code = readFileSync(new URL(`../dist/${file}`, import.meta.url), 'utf8');
      expect(code, file).not.toMatch(
        /from\s*["'](zod|yaml|gpt-tokenizer|@ctxbus\/core(\/contract)?)["']/,
      );
      for (const match of code.matchAll(/from\s+["']\.\/([^"']+)["']/g))
        if (match[1]) visit(match[1]);
    };
    visit('light.js');
    expect([...seen].join(' ')).toContain('light.js');
  });
});
