import { DEFAULT_CHILD_PATH, expandHome } from '@ctxbus/exec';
import { createWorkerHub, TaskWorker } from '@ctxbus/exec/worker';
import { pino } from 'pino';
import { hubUrl, ownRuntimeToken } from '../hub-target.js';
import { loadCapabilities } from './capabilities.js';

export interface WorkerOptions {
  url?: string;
  token?: string;
  runtime?: string;
  capabilities: string;
  root?: string[];
  id?: string;
  concurrency: string;
  lease: string;
  timeout: string;
  inactivity: string;
  sandboxTmp: string;
}

// For the command's actions, which import this module when they run.
export {
  createWorkerHub,
  DEFAULT_CHILD_PATH,
  expandHome,
  hubUrl,
  loadCapabilities,
  ownRuntimeToken,
  pino,
  TaskWorker,
};
