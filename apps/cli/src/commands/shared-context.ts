import { createClient } from '@ctxbus/client';
import { CtxbusError } from '@ctxbus/core/light';
import type { LlmSettings, SharedContextPaths } from '@ctxbus/shared-context';
import {
  bootstrapSharedContext,
  createSharedContextBridge,
  curateDaily,
  detectCrossSignals,
  sharedContextPaths,
  weeklyCompound,
} from '@ctxbus/shared-context';
import { Cron } from 'croner';
import { pino } from 'pino';
import { hubUrl, runtimeToken } from '../hub-target.js';

// `ctxbus shared-context ...`: seed 001's shared-context directory (init, the daily curator,
// cross-signals, the weekly compound) and the bridge that keeps it in step with a hub.

export interface DirOptions {
  dir?: string;
  json?: boolean;
}

export function pathsOf(options: DirOptions): SharedContextPaths {
  return sharedContextPaths(options.dir === undefined ? {} : { dir: options.dir });
}

/** `--date YYYY-MM-DD` as noon UTC of that day (the curator's "now"), else the current time. */
export function parseDateOption(value: string | undefined): Date {
  if (value === undefined) return new Date();
  const date = new Date(`${value}T12:00:00.000Z`);
  // A day that does not exist (2026-02-30) rolls over in Date: it must read back the same.
  if (
    !/^\d{4}-\d{2}-\d{2}$/.test(value) ||
    Number.isNaN(date.getTime()) ||
    date.toISOString().slice(0, 10) !== value
  ) {
    throw new CtxbusError(
      'validation_failed',
      `--date must be a day as YYYY-MM-DD (got "${value}")`,
    );
  }
  return date;
}

export function positiveInt(value: string, flag: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) {
    throw new CtxbusError(
      'validation_failed',
      `${flag} must be a positive whole number (got "${value}")`,
    );
  }
  return Number(value);
}

/**
 * The optional cross-signal enhancer from the environment: off unless
 * CTXBUS_SHARED_CONTEXT_LLM_URL (an OpenAI-compatible base, `.../v1`) and _MODEL are set.
 */
export function llmFromEnvironment(env: NodeJS.ProcessEnv = process.env): LlmSettings | undefined {
  const baseUrl = env.CTXBUS_SHARED_CONTEXT_LLM_URL;
  const model = env.CTXBUS_SHARED_CONTEXT_LLM_MODEL;
  if (!baseUrl || !model) return undefined;
  const timeout = env.CTXBUS_SHARED_CONTEXT_LLM_TIMEOUT_MS;
  return {
    baseUrl,
    model,
    ...(env.CTXBUS_SHARED_CONTEXT_LLM_API_KEY && { apiKey: env.CTXBUS_SHARED_CONTEXT_LLM_API_KEY }),
    ...(timeout && { timeoutMs: positiveInt(timeout, 'CTXBUS_SHARED_CONTEXT_LLM_TIMEOUT_MS') }),
  };
}

// For the command's actions, which import this module when they run.
export {
  bootstrapSharedContext,
  Cron,
  createClient,
  createSharedContextBridge,
  curateDaily,
  detectCrossSignals,
  hubUrl,
  pino,
  runtimeToken,
  weeklyCompound,
};
