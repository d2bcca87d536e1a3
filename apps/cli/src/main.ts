import { runCli } from './cli.js';

// A reader that stops early (`ctxbus list | head`) closes the pipe: stop quietly, as other
// command-line tools do, instead of printing an EPIPE stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw error;
  });
}

runCli(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`ctxbus: error: ${(error as Error).message ?? String(error)}\n`);
    process.exitCode = 1;
  },
);
