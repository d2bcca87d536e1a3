import { describe, expect, it } from 'vitest';
import { LiveOutput } from './delegate.js';

// What `ctxbus delegate --live` prints of the output lines a worker posts while its command
// runs: each a tail of what the command wrote, and where that tail ends in all of it.

function live() {
  const printed = { out: '', err: '' };
  const output = new LiveOutput(
    (text) => {
      printed.out += text;
    },
    (text) => {
      printed.err += text;
    },
  );
  return { output, printed };
}

describe('the live output of ctxbus delegate', () => {
  it('prints each part of the output once, in order, whatever the tails overlap', () => {
    const { output, printed } = live();
    output.show({ tail: 'one\n', end: 4 });
    // The next tail repeats what was printed (a tail keeps the last characters).
    output.show({ tail: 'one\ntwo\n', end: 8 });
    // A line posted again, or an older one, prints nothing.
    output.show({ tail: 'two\n', end: 8 });
    output.show({ tail: 'one\n', end: 4 });
    output.show({ tail: 'o\nthree\n', end: 14 });
    expect(printed).toEqual({ out: 'one\ntwo\nthree\n', err: '' });
  });

  it('says how much no line carried, and goes on from the next', () => {
    const { output, printed } = live();
    output.show({ tail: 'start\n', end: 6 });
    // 10,000 characters came between two posts; the line carries the last 4.
    output.show({ tail: 'end\n', end: 10_010 });
    expect(printed.out).toBe('start\nend\n');
    expect(printed.err).toContain('10000 characters of output not shown here');
  });

  it('prints nothing of a line that does not say where it ends, or of no line', () => {
    const { output, printed } = live();
    output.show({ tail: 'from an older worker', end: null });
    output.show(null);
    expect(printed).toEqual({ out: '', err: '' });
    expect(output.printed).toBe(0);
  });

  it("shows a command's control characters as escapes, as the final output does", () => {
    const { output, printed } = live();
    output.show({ tail: 'ok \u001b[2J\n', end: 8 });
    expect(printed.out).not.toContain('\u001b');
    expect(printed.out).toContain('ok ');
  });
});
