import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseCapabilities } from '../routing/parse-capabilities.js';
import { agentCardFor, ROUTING_EXTENSION_URI } from './agent-card.js';

const matrix = parseCapabilities(
  readFileSync(new URL('../../../../capabilities.yaml', import.meta.url), 'utf8'),
);
const options = { baseUrl: 'http://127.0.0.1:7300', version: '0.1.0' };

describe('agentCardFor', () => {
  it('gives the hub a card whose skills are what some runtime can do, served over JSON-RPC at /a2a', () => {
    const card = agentCardFor(matrix, options);
    expect(card.name).toBe('ctxbus hub');
    expect(card.supportedInterfaces).toEqual([
      { url: 'http://127.0.0.1:7300/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    ]);
    expect(card.skills.map((skill) => skill.id)).toEqual([
      'code_execution',
      'file_operations',
      'search',
      'communication',
      'memory',
    ]);
    const code = card.skills[0];
    expect(code?.description).toBe(
      'claude-code does it natively; codex does it natively; openclaw does it through an API; web does it in a sandbox',
    );
    expect(code?.tags).toEqual(['code_execution', 'native', 'sandboxed', 'via-api']);
    expect(card.capabilities.extensions.map((extension) => extension.uri)).toEqual([
      ROUTING_EXTENSION_URI,
    ]);
    expect(card.securityRequirements).toEqual([{ schemes: { bearer: { list: [] } } }]);
  });

  it('gives each declared runtime its own card, without the capabilities it lacks', () => {
    const narrow = parseCapabilities(
      [
        'version: 1',
        'runtimes:',
        '  phone:',
        '    description: an assistant on a phone',
        '    capabilities:',
        '      communication: { mode: native }',
        '      code_execution: { mode: unavailable }',
        '      translate: { mode: via-api, via: deepl }',
      ].join('\n'),
    );
    const card = agentCardFor(narrow, { ...options, runtime: 'phone' });
    expect(card.name).toBe('ctxbus: phone');
    expect(card.description).toBe('an assistant on a phone');
    expect(card.supportedInterfaces[0]?.url).toBe('http://127.0.0.1:7300/a2a/phone');
    expect(card.skills.map((skill) => [skill.id, skill.name])).toEqual([
      ['communication', 'Communication'],
      ['translate', 'Translate'],
    ]);
    expect(() => agentCardFor(narrow, { ...options, runtime: 'web' })).toThrow(/not declared/);
  });

  it('has no skills when nothing is declared, and says so', () => {
    const card = agentCardFor({ version: 1, runtimes: {} }, options);
    expect(card.skills).toEqual([]);
    expect(card.description).toMatch(/none declared/);
  });
});
