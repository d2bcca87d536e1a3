import { describe, expect, it } from 'vitest';
import type { CommandResult } from './task-worker.js';
import { fitResult, progressTail, reasonForOrigin } from './task-worker.js';

describe('reasonForOrigin: what a refusal tells the task origin', () => {
  it("says only that a working directory is not one of the worker's, whatever the check found", () => {
    const input = { argv: ['ls'], cwd: '/home/me/projects/x/../../.ssh' };
    for (const reason of [
      "the working directory /home/me/projects/x/../../.ssh contains '..'",
      'the working directory /etc/secret does not exist',
      'the working directory /srv/link resolves to /home/me/.ssh, outside the configured roots',
    ]) {
      expect(reasonForOrigin(reason, 'workdir_escape', input)).toBe(
        "the working directory /home/me/projects/x/../../.ssh is not a directory inside this worker's roots",
      );
    }
  });

  it('replaces the paths the origin did not give, and keeps those it did', () => {
    const input = { argv: ['./bin/run', '/data/in.csv'], cwd: '/work/app' };
    expect(
      reasonForOrigin(
        'the program ./bin/run resolves to /home/me/.local/bin/x, outside the working directory',
        'workdir_escape',
        input,
      ),
    ).toBe(
      'the program ./bin/run resolves to <a path on the worker>, outside the working directory',
    );
    expect(
      reasonForOrigin(
        '"cat /data/in.csv" is not in remote_execution.allow (policy /home/me/.config/x.yaml)',
        'not_allowed',
        input,
      ),
    ).toBe('"cat /data/in.csv" is not in remote_execution.allow (policy <a path on the worker>)');
  });
});

describe('fitResult: a result the hub will take', () => {
  const result = (stdout: string, stderr = ''): CommandResult => ({
    argv: ['node', 'big.js'],
    cwd: '/w',
    exitCode: 0,
    signal: null,
    durationMs: 1,
    stdout,
    stderr,
    truncated: false,
    timedOut: null,
    sandboxed: false,
    claimToSpawnMs: null,
  });
  const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value));

  it('leaves a result that fits as it is', () => {
    const small = result('ok\n');
    expect(fitResult(small, 10_000)).toBe(small);
  });

  it("cuts the streams' middles until the JSON fits, keeping head and tail", () => {
    // Control characters take 6 bytes each in JSON: 300,000 of them are 1.8 MB.
    const big = result(
      `HEAD\n${'\u0001'.repeat(300_000)}\nTAIL`,
      `start\n${'e'.repeat(500_000)}\nend`,
    );
    expect(bytes(big)).toBeGreaterThan(1_000_000);
    const fitted = fitResult(big, 100_000);
    expect(bytes(fitted)).toBeLessThanOrEqual(100_000);
    expect(fitted.truncated).toBe(true);
    expect(fitted.stdout.startsWith('HEAD')).toBe(true);
    expect(fitted.stdout.endsWith('TAIL')).toBe(true);
    expect(fitted.stdout).toMatch(/characters cut to fit the hub's result limit/);
    expect(fitted.stderr.startsWith('start')).toBe(true);
    expect(fitted.stderr.endsWith('end')).toBe(true);
  });
});

describe('progressTail: what a progress post shows of a running command', () => {
  it('whole lines only: from the first after a cut, to the last ended unless the command has', () => {
    // The whole output so far (nothing cut before it): its unfinished last line waits.
    expect(progressTail('one\ntwo\nthr', 11, false)).toEqual({ text: 'one\ntwo\n', end: 8 });
    expect(progressTail('one\ntwo\nthr', 11, true)).toEqual({ text: 'one\ntwo\nthr', end: 11 });
    // A tail of a longer output: its first line may be the rest of a secret, and goes.
    expect(progressTail('_rest_of_a_token\nnext\nla', 5_000, false)).toEqual({
      text: 'next\n',
      end: 4_998,
    });
    expect(progressTail('_rest_of_a_token\nnext\nlast', 5_000, true)).toEqual({
      text: 'next\nlast',
      end: 5_000,
    });
    // Nothing whole yet: nothing to post while it runs.
    expect(progressTail('no line ended yet', 17, false)).toBeNull();
    expect(progressTail('partial\nline', 9_000, false)).toBeNull();
  });
});
