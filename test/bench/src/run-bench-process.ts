import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** Runs `./dev bench` (run-bench.ts) with `args` to its end: the tests' way in. */
export function runBench(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [fileURLToPath(new URL('./run-bench.ts', import.meta.url)), ...args],
      { env: { ...process.env, ...env } },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}
