import { Worker } from 'node:worker_threads';

// SQLite's quick_check reads every page of the file: seconds on a large database. It runs on
// a worker thread with its own read-only connection (WAL lets it read beside the hub's writes),
// so the hub answers meanwhile.

/** What the check runs: the first problems quick_check reports, or why it could not run. */
const CHECK = `
const { parentPort, workerData } = require('node:worker_threads');
process.removeAllListeners('warning');
const { DatabaseSync } = require('node:sqlite');
let answer;
try {
  const db = new DatabaseSync(workerData.path, { readOnly: true });
  try {
    const rows = db.prepare('PRAGMA quick_check(' + workerData.limit + ')').all();
    answer = { problems: rows.map((row) => String(Object.values(row)[0])) };
  } finally {
    db.close();
  }
} catch (error) {
  answer = { error: String(error && error.message), errcode: error && error.errcode };
}
parentPort.postMessage(answer);
`;

/** What quick_check found: `problems` (['ok'] when none), or an `error` opening or reading. */
export type IntegrityAnswer =
  | { problems: string[] }
  | { error: string; errcode: number | undefined };

/** Runs quick_check on the file at `path` on a worker thread (at most `limit` problems). */
export function quickCheck(path: string, limit = 5): Promise<IntegrityAnswer> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(CHECK, { eval: true, workerData: { path, limit } });
    // A hub that stops does not wait for it.
    worker.unref();
    worker.once('message', (answer: IntegrityAnswer) => {
      resolve(answer);
      void worker.terminate();
    });
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (code !== 0) reject(new Error(`the integrity check stopped with exit code ${code}`));
    });
  });
}
