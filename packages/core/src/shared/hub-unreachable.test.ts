import { describe, expect, it } from 'vitest';
import { hubUnreachable } from './hub-unreachable.js';

describe('hubUnreachable', () => {
  it('names the network failure in words, from anywhere in the cause chain, and what to do', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), {
      code: 'ECONNREFUSED',
    });
    const wrapped = new Error('Request failed due to a network error', {
      cause: new TypeError('fetch failed', { cause: refused }),
    });
    const error = hubUnreachable('http://127.0.0.1:9', wrapped);
    expect(error.code).toBe('unavailable');
    expect(error.retryable).toBe(true);
    expect(error.message).toBe(
      'cannot reach the ctxbus hub at http://127.0.0.1:9 (connection refused): is it running? Start one with `ctxbus serve --port 9`, or give its address with --url or CTXBUS_URL',
    );
    // The default address needs no --port; a remote hub is not one to serve here.
    expect(hubUnreachable('http://127.0.0.1:7420', refused).message).toMatch(/`ctxbus serve`,/);
    expect(hubUnreachable('https://hub.example.com', refused).message).toMatch(/`ctxbus serve`,/);
    const unknown = hubUnreachable('http://hub', new Error('no answer in 5000 ms'));
    expect(unknown.message).toMatch(
      /^cannot reach the ctxbus hub at http:\/\/hub \(no answer in 5000 ms\)/,
    );
  });
});
