import { runCli } from './cli.js';

runCli(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`ctxbus: error: ${(error as Error).message ?? String(error)}\n`);
    process.exitCode = 1;
  },
);
