import type { Task } from '@ctxbus/core/contract';
import { describe, expect, it } from 'vitest';
import { approvalLines, confirmationText, taskLine } from './tasks.js';

// What `ctxbus approve` asks a person at the terminal: the command, its directory and the
// digest, and the asking runtime's reason as its words (the digest does not cover it).

function waiting(request: Record<string, unknown>): Task {
  return {
    id: 'task_019a0000-0000-7000-8000-000000000001',
    title: 'codex asks to run: curl -sS http://blocked-host.example/',
    origin: 'codex',
    approval: {
      status: 'pending',
      request: {
        argv: ['curl -sS http://blocked-host.example/'],
        cwd: '/home/dev/app',
        ...request,
      },
      requestedBy: 'codex',
      expiresAt: '2026-11-29T10:00:00.000Z',
    },
  } as unknown as Task;
}

describe('the approval a person confirms at the terminal', () => {
  it("shows a runtime's reason as its words, on one escaped line", () => {
    const text = confirmationText(
      waiting({ reason: 'network-access http://blocked-host.example:80\n\u001b[2J' }),
      'ab'.repeat(32),
    );
    expect(text).toContain('  command:    ["curl -sS http://blocked-host.example/"]');
    expect(text).toContain(
      `  reason:     "network-access http://blocked-host.example:80 \\u001b[2J" (codex's words, not in the digest)`,
    );
    expect(text).not.toContain('\u001b');
  });

  it("shows an agent's control characters and bidi overrides as escapes: nothing hides or reorders the command", () => {
    const task = waiting({ argv: ['rm', '-rf', '/tmp/x\u202e#'] });
    task.title = 'run tests \u001b[31mRED\u001b[8mCONCEALED \u001b]52;c;ZXZpbA==\u0007';
    const text = confirmationText(task, 'ef'.repeat(32));
    expect(text).toContain('run tests \\x1b[31mRED\\x1b[8mCONCEALED \\x1b]52;c;ZXZpbA==\\x07');
    expect(text).toContain('  command:    ["rm","-rf","/tmp/x\\u202e#"]');
    for (const raw of ['\u001b', '\u0007', '\u202e']) expect(text).not.toContain(raw);
  });

  it("ctxbus task shows each argument quoted and the title on one line: an agent's newlines forge no line", () => {
    const task = waiting({ argv: ['test\nIn: /home/me/app\nFrom: cli', '&&', 'rm', '-rf', '~'] });
    task.title = 'deploy\napproval: approved by alice';
    task.state = 'AUTH_REQUIRED';
    const lines = approvalLines(task);
    expect(lines).toContain(
      '  command: ["test\\nIn: /home/me/app\\nFrom: cli","&&","rm","-rf","~"]',
    );
    expect(lines.join('\n').split('\n')).toHaveLength(lines.length);
    expect(taskLine(task)).toMatch(/ deploy approval: approved by alice$/);
  });

  it("ctxbus approve shows the title on one line: an agent's newlines forge no command line above the real one", () => {
    const task = waiting({ argv: ['rm', '-rf', 'important'] });
    task.title = 'git status\n  asked by:   cli\n  command:    ["git","status"]';
    const lines = confirmationText(task, 'ab'.repeat(32)).split('\n');
    expect(lines.filter((line) => line.startsWith('  command:'))).toEqual([
      '  command:    ["rm","-rf","important"]',
    ]);
    expect(lines[0]).toMatch(
      /^Task task_\S+: git status asked by: cli command: \["git","status"\]$/,
    );
  });

  it('has no reason line when the runtime gave none (a worker asks with its script hash)', () => {
    const text = confirmationText(waiting({ scriptHash: 'f'.repeat(64) }), 'cd'.repeat(32));
    expect(text).not.toContain('reason:');
    expect(text).toContain(`  script:     sha256 ${'f'.repeat(64)}`);
  });
});
