import { readSync } from 'node:fs';

/**
 * All of stdin as UTF-8 text, for a hook: its runtime writes the event's JSON there and closes
 * it. Read straight from the fd, since process.stdin's stream costs a hook run ~3 ms of CPU
 * (measured on Node 24). A non-blocking fd with nothing to read yet (EAGAIN), or one that
 * cannot be read so, goes on with the stream (`rest`), after what was already read.
 */
export async function readHookStdin(
  fd = 0,
  rest: () => AsyncIterable<Buffer | string> = () => process.stdin,
): Promise<string> {
  const chunks: Buffer[] = [];
  try {
    for (;;) {
      const buffer = Buffer.allocUnsafe(64 * 1024);
      const read = readSync(fd, buffer, 0, buffer.length, null);
      if (read === 0) return Buffer.concat(chunks).toString('utf8');
      chunks.push(buffer.subarray(0, read));
    }
  } catch {
    for await (const chunk of rest()) chunks.push(Buffer.from(chunk));
    return Buffer.concat(chunks).toString('utf8');
  }
}
