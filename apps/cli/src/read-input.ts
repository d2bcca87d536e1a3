import { readFile } from 'node:fs/promises';
import { CtxbusError } from '@ctxbus/core/light';

/** All of stdin as UTF-8, through its stream: a pipe may be non-blocking (EAGAIN when read at once). */
async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks).toString('utf8');
}

/** A file's text, or stdin's for `-`: `validation_failed` naming it when it cannot be read. */
export async function readInput(path: string): Promise<string> {
  try {
    return path === '-' ? await readStdin() : await readFile(path, 'utf8');
  } catch (error) {
    throw new CtxbusError(
      'validation_failed',
      `cannot read ${path === '-' ? 'stdin' : path}: ${(error as Error).message}`,
    );
  }
}
