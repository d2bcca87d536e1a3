import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { removeDir, runCli, spawnCli, tempDir } from '@ctxbus/test-kit';
import { afterAll, describe, expect, it } from 'vitest';

// `ctxbus route --explain` and `ctxbus capabilities schema`, as real processes.

const FILE = fileURLToPath(new URL('../../../capabilities.yaml', import.meta.url));
const SCHEMA = fileURLToPath(new URL('../../../schemas/capabilities.schema.json', import.meta.url));
const dirs: string[] = [];

afterAll(() => {
  for (const dir of dirs) removeDir(dir);
});

const explain = (task: string, ...more: string[]) =>
  runCli(['route', '--explain', task, '--capabilities', FILE, ...more]);

describe('ctxbus route --explain', () => {
  it('prints the decision, its reason and every candidate with why it was kept or dropped', async () => {
    const result = await explain('{"requiredCapabilities":["code_execution"],"origin":"openclaw"}');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(
      [
        'proxy: openclaw -> claude-code',
        "  why:      openclaw cannot do it itself (code_execution goes via-api to claude-code, a proxy); proxied to claude-code (can: code_execution native; online, 1 worker), ranked above codex: the origin's declared target",
        '  how:      code_execution native (Bash)',
        '  approval: not needed',
        "  presence: assumed, no hub asked: every runtime online with 1 worker (the hub's view: ctxbus capabilities show --hub)",
        '',
        'candidates (* chosen, + could, - could not):',
        '  - openclaw     origin  cannot do it itself: code_execution goes via-api to claude-code, a proxy',
        '  * claude-code  kept    can: code_execution native; online, 1 worker',
        '  + codex        kept    can: code_execution native; online, 1 worker',
        '  + web          kept    can: code_execution sandboxed; online, 1 worker',
        '',
      ].join('\n'),
    );
  });

  it('takes --offline runtimes as offline, and an undeclared origin as restricted', async () => {
    const result = await explain(
      '{"requiredCapabilities":["code_execution"],"origin":"my-agent","constraints":{"network":true}}',
      '--offline',
      // Both runtimes that run code natively away: the task waits (Codex would take it).
      'claude-code,codex',
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^queue: my-agent -> claude-code\n/);
    expect(result.stdout).toContain(
      'approval: required: my-agent is not declared in capabilities.yaml (treated as restricted)',
    );
    expect(result.stdout).toContain(
      'presence: assumed, no hub asked: every runtime online with 1 worker, but claude-code, codex offline',
    );
    expect(result.stdout).toMatch(
      /^ {2}- web +dropped +code_execution sandbox has no network but the task needs it$/m,
    );
  });

  it('takes the task after the options too: --explain --offline X TASK, or TASK alone', async () => {
    const task =
      '{"requiredCapabilities":["code_execution"],"origin":"my-agent","constraints":{"network":true}}';
    const late = await runCli([
      'route',
      '--explain',
      '--offline',
      'claude-code,codex',
      task,
      '--capabilities',
      FILE,
    ]);
    expect(late.code, late.stderr).toBe(0);
    expect(late.stdout).toMatch(/^queue: my-agent -> claude-code\n/);
    const alone = await runCli(['route', task, '--capabilities', FILE]);
    expect(alone.code, alone.stderr).toBe(0);
    expect(alone.stdout).toMatch(/^(proxy|queue|run|escalate)/);
    const none = await runCli(['route', '--explain', '--capabilities', FILE]);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/^ctxbus: error: no task: give it as JSON/);
    const both = await runCli(['route', '--explain', task, task, '--capabilities', FILE]);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/two tasks given/);
  });

  it('prints the decision object with --json, the task read from stdin with -', async () => {
    const result = await runCli(
      [
        'route',
        '--explain',
        '-',
        '--capabilities',
        FILE,
        '--json',
        '--offline',
        'claude-code,codex',
      ],
      {
        input:
          '{"requiredCapabilities":["code_execution"],"origin":"openclaw","preferences":{"allowQueue":false}}',
      },
    );
    expect(result.code, result.stderr).toBe(0);
    const decision = JSON.parse(result.stdout);
    expect(decision).toMatchObject({
      kind: 'proxy',
      runtime: 'web',
      modes: { code_execution: 'sandboxed' },
      requiresApproval: false,
    });
    expect(decision.candidates.map((entry: { runtime: string }) => entry.runtime)).toEqual([
      'openclaw',
      'web',
      'claude-code',
      'codex',
    ]);
    expect(decision.candidates[2].reason).toBe('offline, and the task does not allow queueing');
    expect(decision.candidates[3].reason).toBe('offline, and the task does not allow queueing');
  });

  it('refuses bad JSON, a bad field, an undeclared --offline runtime and a bad file: exit 2, one line', async () => {
    const cases: [string[], RegExp][] = [
      [
        ['{bad'],
        /^ctxbus: error: task: not JSON \(.*\); give it as a RouteRequest, e\.g\. '\{"requiredCapabilities"/,
      ],
      [
        ['{"requiredCapabilities":[],"origin":"web"}'],
        /^ctxbus: error: task\.requiredCapabilities: Too small/,
      ],
      [
        ['{"requiredCapabilities":["search"],"origin":"web","hurry":true}'],
        /^ctxbus: error: task: Unrecognized key: "hurry"/,
      ],
      [
        ['{"requiredCapabilities":["search"],"origin":"web"}', '--offline', 'nope'],
        /^ctxbus: error: --offline: "nope" is not declared in the capabilities file \(declared: claude-code, openclaw, codex, web\)$/,
      ],
    ];
    for (const [args, expected] of cases) {
      const result = await explain(...(args as [string, ...string[]]));
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr.trim()).toMatch(expected);
    }
    const dir = tempDir();
    dirs.push(dir);
    const bad = join(dir, 'capabilities.yaml');
    writeFileSync(bad, 'version: 2\nruntimes: {}\n');
    const badFile = await runCli([
      'route',
      '--explain',
      '{"requiredCapabilities":["search"],"origin":"web"}',
      '--capabilities',
      bad,
    ]);
    expect(badFile.code).toBe(2);
    expect(badFile.stderr).toContain(`${bad}:1:10: version: `);
  });

  it('has --help with an example', async () => {
    const help = await runCli(['route', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--explain [task]');
    expect(help.stdout).toContain(
      `ctxbus route --explain '{"requiredCapabilities":["code_execution"],"origin":"openclaw"}'`,
    );
  });
});

describe('output piped to a reader that stops early', () => {
  it('ends quietly, as `ctxbus ... | head` expects: no EPIPE stack trace', async () => {
    const run = spawnCli(['capabilities', 'schema']);
    // The reader is gone before the command writes a byte.
    run.child.stdout?.destroy();
    const result = await run.done;
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });
});

describe('ctxbus capabilities schema', () => {
  it('prints the JSON Schema the repository commits', async () => {
    const result = await runCli(['capabilities', 'schema']);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual(JSON.parse(readFileSync(SCHEMA, 'utf8')));
  });
});
