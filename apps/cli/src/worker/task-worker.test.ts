import { describe, expect, it } from 'vitest';
import { reasonForOrigin } from './task-worker.js';

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
