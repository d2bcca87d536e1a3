import nodeModule from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';
import { CtxbusError } from '@ctxbus/core/light';
import type { HubRunOptions } from './commands/run-hub.js';
import type { WorkerMessage } from './commands/serve.js';

// A worker does not share the main thread's compile cache (bin.ts): enable it here, before the
// hub's modules load.
nodeModule.enableCompileCache?.();

// The hub's thread (started by `ctxbus serve`). It stops when the main thread says so.
const port = parentPort;
if (!port) throw new Error('serve-worker must run in a worker thread');

const stopped = new Promise<string>((resolve) => {
  port.on('message', (message: { type: string; signal?: string }) => {
    if (message.type === 'stop') resolve(message.signal ?? 'stop');
  });
});

try {
  const { runHub } = await import('./commands/run-hub.js');
  await runHub(workerData as HubRunOptions, stopped);
  process.exit(0);
} catch (error) {
  const failure: WorkerMessage = CtxbusError.isInstance(error)
    ? { type: 'failed', code: error.code, message: error.message }
    : { type: 'failed', code: 'internal', message: (error as Error).message ?? String(error) };
  port.postMessage(failure);
  process.exit(1);
}
