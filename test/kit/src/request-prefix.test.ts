import { describe, expect, it } from 'vitest';
import { requestStartsWith } from './request-prefix.ts';

const tools = [{ name: 'Bash', input_schema: { type: 'object' } }];

describe('requestStartsWith (Anthropic Messages)', () => {
  const first = {
    model: 'claude',
    tools,
    system: [{ type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } }],
    messages: [
      {
        role: 'user',
        content: [{ type: 'text', text: 'Question 1', cache_control: { type: 'ephemeral' } }],
      },
    ],
  };

  it('accepts the next turn: the same head, the earlier messages first, breakpoints moved', () => {
    const next = {
      ...first,
      max_tokens: 999,
      system: [{ type: 'text', text: 'You are Claude Code.' }],
      messages: [
        { role: 'user', content: 'Question 1' },
        { content: [{ text: 'Answer 1', type: 'text' }], role: 'assistant' },
        { role: 'user', content: [{ type: 'text', text: 'Q2', cache_control: { type: 'x' } }] },
      ],
    };
    expect(requestStartsWith('anthropic-messages', first, next)).toEqual({ starts: true });
    expect(requestStartsWith('anthropic-messages', first, first)).toEqual({ starts: true });
  });

  it('names the first message that changed, with both texts from where they differ', () => {
    const next = {
      ...first,
      messages: [{ role: 'user', content: 'Question 1 (edited)' }, ...first.messages],
    };
    const verdict = requestStartsWith('anthropic-messages', first, next);
    expect(verdict.starts).toBe(false);
    expect(verdict.part).toBe('messages[0]');
    expect(verdict.detail).toContain('(edited)');
  });

  it('refuses a changed system prompt or tool list, and a request shorter than the earlier', () => {
    const system = { ...first, system: 'You are Claude Code. Today is Tuesday.' };
    expect(requestStartsWith('anthropic-messages', first, system).part).toBe('system');
    const moreTools = { ...first, tools: [...tools, { name: 'Read' }] };
    expect(requestStartsWith('anthropic-messages', first, moreTools).part).toBe('tools');
    expect(
      requestStartsWith('anthropic-messages', first, { ...first, messages: [] }),
    ).toMatchObject({ starts: false, part: 'messages[0]' });
  });

  it('keeps two blocks apart from one block or a string', () => {
    const two = {
      ...first,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Question' },
            { type: 'text', text: ' 1' },
          ],
        },
      ],
    };
    expect(requestStartsWith('anthropic-messages', first, two).starts).toBe(false);
  });
});

describe('requestStartsWith (Chat Completions)', () => {
  const first = {
    tools: [{ type: 'function', function: { name: 'tool_call' } }],
    messages: [
      { role: 'system', content: 'You are OpenClaw.' },
      { role: 'user', content: '<team-context>a</team-context>\n\nQuestion 1' },
      { role: 'user', content: '<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>> exec sessions' },
    ],
  };

  it('finds a trailing message the next request leaves out', () => {
    const next = {
      ...first,
      messages: [
        ...first.messages.slice(0, 2),
        { role: 'assistant', content: 'Answer 1' },
        { role: 'user', content: 'Question 2' },
      ],
    };
    expect(requestStartsWith('chat-completions', first, next)).toMatchObject({
      starts: false,
      part: 'messages[2]',
    });
    const kept = { ...next, messages: [...first.messages, ...next.messages.slice(2)] };
    expect(requestStartsWith('chat-completions', first, kept).starts).toBe(true);
  });

  it('counts a string and one text part as the same content', () => {
    const parts = {
      ...first,
      messages: first.messages.map((message) => ({
        ...message,
        content: [{ type: 'text', text: message.content }],
      })),
    };
    expect(requestStartsWith('chat-completions', first, parts).starts).toBe(true);
  });
});

describe('requestStartsWith (Responses)', () => {
  const first = {
    instructions: 'You are Codex.',
    tools: [{ type: 'function', name: 'shell' }],
    input: [
      { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'ctxbus' }] },
      { role: 'user', content: [{ type: 'input_text', text: 'Question 1' }] },
    ],
  };

  it('accepts a resumed session that resends the input with the type spelt out', () => {
    const next = {
      ...first,
      input: [
        { type: 'message', role: 'developer', content: 'ctxbus' },
        { type: 'message', role: 'user', content: 'Question 1' },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'A1' }] },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Question 2' }] },
      ],
    };
    expect(requestStartsWith('responses', first, next)).toEqual({ starts: true });
  });

  it('refuses other instructions, and an input item with more than its text', () => {
    expect(
      requestStartsWith('responses', first, { ...first, instructions: 'You are Codex 2.' }).part,
    ).toBe('instructions');
    const annotated = {
      ...first,
      input: [
        first.input[0],
        {
          role: 'user',
          content: [{ type: 'input_text', text: 'Question 1', annotations: ['x'] }],
        },
      ],
    };
    expect(requestStartsWith('responses', first, annotated).part).toBe('input[1]');
  });
});
