import { CtxbusError } from '@ctxbus/core';
import { describe, expect, it } from 'vitest';
import { loadPg } from './load-pg.js';

describe('loadPg', () => {
  it('loads the installed driver', async () => {
    const pg = await loadPg();
    expect(typeof pg.Pool).toBe('function');
  });

  it('says what to install when the driver is missing', async () => {
    const missing = Object.assign(new Error("Cannot find package 'pg'"), {
      code: 'ERR_MODULE_NOT_FOUND',
    });
    const error = await loadPg(() => Promise.reject(missing)).catch((caught: unknown) => caught);
    expect(CtxbusError.isInstance(error)).toBe(true);
    expect((error as CtxbusError).code).toBe('unavailable');
    expect((error as CtxbusError).message).toContain('npm install pg');
  });

  it('passes any other failure on as it is', async () => {
    const broken = new Error('the driver threw while loading');
    await expect(loadPg(() => Promise.reject(broken))).rejects.toBe(broken);
  });
});
