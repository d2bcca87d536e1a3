import { readFile } from 'node:fs/promises';
import { readHookStdin } from '@ctxbus/client/light';
import { CtxbusError } from '@ctxbus/core/light';

/** A file's text, or stdin's for `-`: `validation_failed` naming it when it cannot be read. */
export async function readInput(path: string): Promise<string> {
  try {
    return path === '-' ? await readHookStdin() : await readFile(path, 'utf8');
  } catch (error) {
    throw new CtxbusError(
      'validation_failed',
      `cannot read ${path === '-' ? 'stdin' : path}: ${(error as Error).message}`,
    );
  }
}
