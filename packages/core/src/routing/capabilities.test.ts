import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  capabilitiesJsonSchema,
  capabilityMode,
  capabilityNames,
  personRefusal,
} from './capabilities.js';
import { parseCapabilities } from './parse-capabilities.js';

const ROOT_FILE = new URL('../../../../capabilities.yaml', import.meta.url);
const SCHEMA_FILE = new URL('../../../../schemas/capabilities.schema.json', import.meta.url);

const errorOf = (text: string) => {
  try {
    parseCapabilities(text, 'caps.yaml');
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('parsed');
};

describe('parseCapabilities', () => {
  it("names seed 000's capability-first matrix and the layout it reads instead", () => {
    const seed = [
      'capabilities:',
      '  code_execution:',
      '    claude-code: native (Bash tool)',
      '    openclaw: via-api (call a remote code execution service)',
      '  search:',
      '    claude-code: native (Grep, Glob, web search)',
    ].join('\n');
    expect(errorOf(seed)).toMatch(
      /^caps\.yaml:1:1: this is seed 000's capability-first layout .*runtimes first .*ctxbus capabilities init/,
    );
    // Our own layout with a mistake is still told field by field.
    expect(errorOf('version: 2\nruntimes: {}\n')).toMatch(/^caps\.yaml:1:\d+: version: /);
  });

  it("reads the repository's capabilities.yaml: the seed's three runtimes and Codex", () => {
    const matrix = parseCapabilities(readFileSync(ROOT_FILE, 'utf8'));
    expect(Object.keys(matrix.runtimes)).toEqual(['claude-code', 'openclaw', 'codex', 'web']);
    expect(capabilityMode(matrix, 'claude-code', 'code_execution')).toBe('native');
    expect(capabilityMode(matrix, 'openclaw', 'code_execution')).toBe('via-api');
    expect(matrix.runtimes.openclaw?.capabilities.code_execution?.target).toBe('claude-code');
    expect(capabilityMode(matrix, 'web', 'code_execution')).toBe('sandboxed');
    expect(matrix.runtimes.web?.capabilities.code_execution?.limits).toEqual({
      network: false,
      seconds: 30,
    });
    expect(matrix.runtimes['claude-code']?.trust).toBe('standard');
    expect(matrix.remote_execution?.allow).toContain('npm test');
    expect(capabilityNames(matrix).slice(0, 5)).toEqual([
      'code_execution',
      'file_operations',
      'search',
      'communication',
      'memory',
    ]);
  });

  it('treats an absent capability, runtime or prototype name as unavailable', () => {
    const matrix = parseCapabilities(
      'version: 1\nruntimes:\n  bot:\n    description: a bot\n    capabilities:\n      deploy: { mode: native }\n',
    );
    expect(capabilityMode(matrix, 'bot', 'deploy')).toBe('native');
    expect(capabilityMode(matrix, 'bot', 'memory')).toBe('unavailable');
    expect(capabilityMode(matrix, 'nobody', 'memory')).toBe('unavailable');
    expect(capabilityMode(matrix, 'constructor', 'toString')).toBe('unavailable');
    expect(capabilityNames(matrix)).toContain('deploy');
  });

  it('names the file, line and column and what was expected', () => {
    expect(
      errorOf(
        'version: 1\nruntimes:\n  bot:\n    description: a bot\n    capabilities:\n      search: { mode: sometimes }\n',
      ),
    ).toMatch(
      /^caps\.yaml:6:23: runtimes\.bot\.capabilities\.search\.mode: Invalid option: expected one of "native"\|"via-api"\|"via-mcp"\|"sandboxed"\|"unavailable"$/,
    );
    expect(errorOf('version: 1\nruntimes:\n  Bad Name:\n    description: x\n')).toMatch(
      /^caps\.yaml:3:3: runtimes\.Bad Name: /,
    );
    // A runtime is named as a token names it: one no token could name is refused here.
    expect(errorOf('version: 1\nruntimes:\n  my_agent:\n    description: x\n')).toMatch(
      /^caps\.yaml:3:3: runtimes\.my_agent: a runtime name is 1-40 lowercase letters, digits or dashes/,
    );
    expect(errorOf('version: 2\nruntimes: {}\n')).toMatch(/^caps\.yaml:1:10: version: /);
    expect(errorOf('version: 1\nruntimes:\n  bot:\n    descripton: typo\n')).toMatch(
      /^caps\.yaml:4:5: runtimes\.bot/,
    );
    expect(errorOf('version: 1\nruntimes: [unclosed\n')).toMatch(/^caps\.yaml:\d+:\d+: /);
  });
});

describe('capabilitiesJsonSchema', () => {
  it('equals the committed schemas/capabilities.schema.json', () => {
    const committed = JSON.parse(readFileSync(SCHEMA_FILE, 'utf8'));
    expect(
      committed,
      'schemas/capabilities.schema.json is stale; regenerate it at the repository root: ./dev ctxbus capabilities schema > schemas/capabilities.schema.json && pnpm format',
    ).toEqual(capabilitiesJsonSchema());
  });

  it('is the input side (defaults optional) and names the editor hook in capabilities.yaml', () => {
    const schema = capabilitiesJsonSchema() as {
      required: string[];
      properties: { runtimes: { additionalProperties: { required: string[] } } };
    };
    expect(schema.required).toEqual(['version', 'runtimes']);
    // trust and capabilities have defaults, so a runtime needs only its description.
    expect(schema.properties.runtimes.additionalProperties.required).toEqual(['description']);
    expect(readFileSync(ROOT_FILE, 'utf8').split('\n')[0]).toBe(
      '# yaml-language-server: $schema=./schemas/capabilities.schema.json',
    );
  });
});

describe('personRefusal', () => {
  const matrix = parseCapabilities(
    [
      'version: 1',
      'approvers: [cli, telegram, kiosk]',
      'runtimes:',
      '  cli: { description: a person at a terminal, capabilities: {} }',
      '  telegram: { description: a person on a phone, capabilities: {} }',
      '  kiosk: { description: a shared screen, trust: restricted, capabilities: {} }',
      '  claude-code: { description: an agent, capabilities: {} }',
    ].join('\n'),
  );

  it('lets an approver runtime decide, and refuses agents, undeclared and restricted runtimes', () => {
    expect(personRefusal(matrix, 'cli')).toBeNull();
    expect(personRefusal(matrix, 'telegram')).toBeNull();
    expect(personRefusal(matrix, 'claude-code')).toMatchObject({
      role: 'not_an_approver',
      declared: true,
      source: 'file',
    });
    expect(personRefusal(matrix, 'ghost')).toMatchObject({
      role: 'not_an_approver',
      declared: false,
    });
    expect(personRefusal(matrix, 'kiosk')).toMatchObject({ role: 'restricted' });
    expect(personRefusal(matrix, '__proto__')).toMatchObject({ role: 'not_an_approver' });
  });
});
