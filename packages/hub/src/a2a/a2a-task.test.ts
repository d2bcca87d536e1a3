import type { Task, TaskEvent } from '@ctxbus/core';
import { ROUTING_EXTENSION_URI, TASK_STATES } from '@ctxbus/core';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { cardBaseUrl, isLoopbackHostname, normalizePublicUrl } from './a2a-base-url.js';
import type { SendMessageParams } from './a2a-task.js';
import { A2A_TASK_STATES, endsA2aStream, taskRequestFromMessage, toA2aTask } from './a2a-task.js';

const task: Task = {
  id: 'task_00000000-0000-4000-8000-000000000001',
  teamId: 'acme',
  title: 'run the tests',
  description: null,
  requiredCapabilities: ['code_execution'],
  origin: 'openclaw',
  scope: null,
  input: { argv: ['npm', 'test'] },
  idempotencyKey: null,
  state: 'SUBMITTED',
  targetRuntime: 'claude-code',
  routing: { kind: 'queue', runtime: 'claude-code', reason: 'claude-code is offline' },
  attempts: 0,
  maxAttempts: 3,
  ttlSeconds: null,
  lease: null,
  result: null,
  error: null,
  createdAt: '2026-03-01T10:00:00.000Z',
  updatedAt: '2026-03-01T10:00:01.000Z',
  expiresAt: null,
  approval: null,
};

function params(
  parts: SendMessageParams['message']['parts'],
  metadata?: Record<string, z.core.util.JSONType>,
): SendMessageParams {
  return {
    message: {
      messageId: 'm-1',
      role: 'ROLE_USER',
      parts,
      ...(metadata && { metadata }),
    },
  };
}

describe('ctxbus tasks as A2A tasks', () => {
  it('names every state as A2A 1.0 does, and ends streams on terminal and interrupted ones', () => {
    for (const state of TASK_STATES) expect(A2A_TASK_STATES[state]).toBe(`TASK_STATE_${state}`);
    expect(TASK_STATES.filter(endsA2aStream)).toEqual([
      'INPUT_REQUIRED',
      'AUTH_REQUIRED',
      'COMPLETED',
      'FAILED',
      'CANCELED',
      'REJECTED',
    ]);
  });

  it('carries the routing decision in the extension metadata and the result as an artifact', () => {
    expect(toA2aTask(task)).toEqual({
      id: task.id,
      contextId: task.id,
      status: { state: 'TASK_STATE_SUBMITTED', timestamp: task.updatedAt },
      metadata: {
        [ROUTING_EXTENSION_URI]: task.routing,
        ctxbus: {
          state: 'SUBMITTED',
          origin: 'openclaw',
          targetRuntime: 'claude-code',
          requiredCapabilities: ['code_execution'],
          attempts: 0,
        },
      },
    });
    const done = toA2aTask({ ...task, state: 'COMPLETED', result: { exitCode: 0 } });
    expect(done.artifacts).toEqual([
      { artifactId: `${task.id}:result`, name: 'result', parts: [{ data: { exitCode: 0 } }] },
    ]);
    const failed = toA2aTask({
      ...task,
      state: 'FAILED',
      error: { code: 'exit', message: 'boom' },
    });
    expect(failed.status.message?.parts).toEqual([{ text: 'exit: boom' }]);
    const rejected = toA2aTask({ ...task, state: 'REJECTED' });
    expect(rejected.status.message?.parts).toEqual([{ text: 'claude-code is offline' }]);
  });

  it('says what an interrupted task waits for: the question asked, the command to approve', () => {
    const asked = { ...task, state: 'INPUT_REQUIRED' as const };
    const history = [
      {
        seq: 1,
        taskId: task.id,
        at: task.createdAt,
        from: null,
        to: 'SUBMITTED',
        by: 'openclaw',
        note: null,
      },
      {
        seq: 2,
        taskId: task.id,
        at: task.updatedAt,
        from: 'WORKING',
        to: 'INPUT_REQUIRED',
        by: 'w',
        note: 'which branch?',
      },
    ] as TaskEvent[];
    expect(toA2aTask(asked, history).status.message?.parts).toEqual([{ text: 'which branch?' }]);
    // A note of an older state says nothing of this one.
    expect(toA2aTask(asked, history.slice(0, 1)).status.message).toBeUndefined();
    const held = toA2aTask({
      ...task,
      state: 'AUTH_REQUIRED',
      approval: {
        status: 'pending',
        request: { argv: ['ls', '-la'], cwd: '/work/app' },
        requestedBy: 'claude-code',
        expiresAt: '2026-03-01T11:00:00.000Z',
      },
    } as unknown as Task);
    expect(held.status.message?.parts).toEqual([
      { text: 'waiting for a person to approve running ["ls","-la"] in "/work/app"' },
    ]);
  });
});

describe('an A2A message as a task request', () => {
  it('takes the title from the text, capabilities from the extension, input from the data part', () => {
    const request = taskRequestFromMessage(
      params([{ text: 'run the tests\nin api/' }, { data: { argv: ['npm', 'test'] } }], {
        [ROUTING_EXTENSION_URI]: { requiredCapabilities: ['code_execution'] },
      }),
    );
    expect(request).toEqual({
      title: 'run the tests',
      description: 'run the tests\nin api/',
      requiredCapabilities: ['code_execution'],
      input: { argv: ['npm', 'test'] },
      idempotencyKey: 'a2a:m-1',
    });
  });

  it("reads capabilities and preferences from the data part, and puts a card's runtime first", () => {
    const request = taskRequestFromMessage(
      params([
        { text: 'look it up' },
        {
          data: {
            requiredCapabilities: ['search'],
            preferences: { prefer: ['web', 'openclaw'] },
            query: 'a2a',
          },
        },
      ]),
      'openclaw',
    );
    expect(request).toMatchObject({
      title: 'look it up',
      requiredCapabilities: ['search'],
      input: { query: 'a2a' },
      preferences: { prefer: ['openclaw', 'web'] },
    });
    expect(request.description).toBeUndefined();
  });

  it('refuses a message without capabilities, without text, or making an invalid task', () => {
    expect(() => taskRequestFromMessage(params([{ text: 'do it' }]))).toThrow(
      /requiredCapabilities/,
    );
    expect(() =>
      taskRequestFromMessage(params([{ data: { requiredCapabilities: ['search'] } }])),
    ).toThrow(/text part/);
    expect(() =>
      taskRequestFromMessage(
        params([{ text: 'x' }, { data: { requiredCapabilities: ['not a name!'] } }]),
      ),
    ).toThrow(/requiredCapabilities/);
  });
});

describe('the base URL of a card', () => {
  it('is the configured public URL when there is one, whatever the request says', () => {
    const publicUrl = normalizePublicUrl('https://hub.example.com/ctxbus/');
    expect(publicUrl).toBe('https://hub.example.com/ctxbus');
    expect(cardBaseUrl('http://evil.example/.well-known/agent-card.json', publicUrl)).toBe(
      'https://hub.example.com/ctxbus',
    );
    expect(() => normalizePublicUrl('ftp://hub.example.com')).toThrow(/http/);
    expect(() => normalizePublicUrl('https://hub.example.com/?x=1')).toThrow(/query/);
  });

  it("is the request's origin only for loopback names", () => {
    expect(cardBaseUrl('http://127.0.0.1:7300/x', null)).toBe('http://127.0.0.1:7300');
    expect(cardBaseUrl('http://[::1]:7300/x', null)).toBe('http://[::1]:7300');
    expect(cardBaseUrl('http://localhost:7300/x', null)).toBe('http://localhost:7300');
    for (const name of [
      'evil.example',
      '10.0.0.1',
      '[::ffff:10.0.0.1]',
      'localhost.evil.example',
    ]) {
      expect(isLoopbackHostname(name)).toBe(false);
      expect(() => cardBaseUrl(`http://${name}/x`, null)).toThrow(/--public-url/);
    }
    expect(isLoopbackHostname('[::ffff:127.0.0.1]')).toBe(true);
    expect(isLoopbackHostname('127.8.9.10')).toBe(true);
  });
});
