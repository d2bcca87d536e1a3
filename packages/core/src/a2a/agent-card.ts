import type { CapabilitiesFile, CapabilityMode } from '../routing/capabilities.js';
import { capabilityMode, capabilityNames } from '../routing/capabilities.js';

// A2A 1.0 Agent Cards derived from the capability matrix: one for the hub (every capability
// some runtime can do, routed by ctxbus) and one per declared runtime. JSON as the spec's
// proto3 JSON mapping writes it (camelCase, oneof members by name). Pure.

/** The A2A extension that carries ctxbus's routing explanation on tasks. */
export const ROUTING_EXTENSION_URI = 'urn:ctxbus:a2a:routing:v1';
export const A2A_PROTOCOL_VERSION = '1.0';

export interface AgentSkillJson {
  id: string;
  name: string;
  description: string;
  tags: string[];
  examples: string[];
  inputModes: string[];
  outputModes: string[];
}

export interface AgentCardJson {
  name: string;
  description: string;
  version: string;
  supportedInterfaces: { url: string; protocolBinding: string; protocolVersion: string }[];
  capabilities: {
    streaming: boolean;
    pushNotifications: boolean;
    extensions: { uri: string; description: string; required: boolean }[];
  };
  securitySchemes: Record<
    string,
    { httpAuthSecurityScheme: { scheme: string; description: string } }
  >;
  securityRequirements: { schemes: Record<string, { list: string[] }> }[];
  defaultInputModes: string[];
  defaultOutputModes: string[];
  skills: AgentSkillJson[];
}

export interface AgentCardOptions {
  /** The hub's public base URL, without a trailing slash. */
  baseUrl: string;
  /** ctxbus's version. */
  version: string;
  /** A declared runtime's own card; the hub's when absent. */
  runtime?: string;
}

const MODE_WORDS: Record<CapabilityMode, string> = {
  native: 'natively',
  'via-api': 'through an API',
  'via-mcp': 'through an MCP server',
  sandboxed: 'in a sandbox',
  unavailable: 'not at all',
};

function skillName(capability: string): string {
  const words = capability.replaceAll(/[_-]+/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

function skillFor(
  matrix: CapabilitiesFile,
  capability: string,
  runtimes: string[],
): AgentSkillJson | null {
  const able = runtimes
    .map((runtime) => ({ runtime, mode: capabilityMode(matrix, runtime, capability) }))
    .filter(({ mode }) => mode !== 'unavailable');
  if (able.length === 0) return null;
  return {
    id: capability,
    name: skillName(capability),
    description: able
      .map(({ runtime, mode }) => `${runtime} does it ${MODE_WORDS[mode]}`)
      .join('; '),
    tags: [capability, ...new Set(able.map(({ mode }) => mode))].sort(),
    examples: [],
    inputModes: ['text/plain', 'application/json'],
    outputModes: ['text/plain', 'application/json'],
  };
}

/**
 * The hub's Agent Card, or a declared runtime's. Skills are the capabilities that are not
 * `unavailable`, in `capabilityNames` order; the JSON-RPC interface is the hub's `/a2a`, or
 * `/a2a/<runtime>` for a runtime's card (the same endpoint, preferring that runtime).
 * Throws a plain Error for an undeclared runtime (the route answers 404 first).
 */
export function agentCardFor(matrix: CapabilitiesFile, options: AgentCardOptions): AgentCardJson {
  const { baseUrl, version, runtime } = options;
  const declared = Object.keys(matrix.runtimes).sort();
  if (runtime !== undefined && !declared.includes(runtime)) {
    throw new Error(`runtime "${runtime}" is not declared in the capability matrix`);
  }
  const runtimes = runtime === undefined ? declared : [runtime];
  const skills = capabilityNames(matrix)
    .map((capability) => skillFor(matrix, capability, runtimes))
    .filter((skill): skill is AgentSkillJson => skill !== null);
  const entry = runtime === undefined ? undefined : matrix.runtimes[runtime];
  return {
    name: runtime === undefined ? 'ctxbus hub' : `ctxbus: ${runtime}`,
    description:
      entry?.description ??
      `Routes each task to a runtime that can do it (${declared.join(', ') || 'none declared'}), or to a human; every decision explained.`,
    version,
    supportedInterfaces: [
      {
        url:
          runtime === undefined
            ? `${baseUrl}/a2a`
            : `${baseUrl}/a2a/${encodeURIComponent(runtime)}`,
        protocolBinding: 'JSONRPC',
        protocolVersion: A2A_PROTOCOL_VERSION,
      },
    ],
    capabilities: {
      streaming: true,
      pushNotifications: false,
      extensions: [
        {
          uri: ROUTING_EXTENSION_URI,
          description:
            "ctxbus's routing decision on each task: the runtime chosen, the candidates and why",
          required: false,
        },
      ],
    },
    securitySchemes: {
      bearer: {
        httpAuthSecurityScheme: { scheme: 'Bearer', description: 'a ctxbus runtime token' },
      },
    },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills,
  };
}
