/**
 * The capabilities file of a worker's machine in tests: Claude Code runs code natively, trusts
 * OpenClaw's tasks (standard), and runs only `allow` under `root`. `more` adds lines under
 * `runtimes:` (another runtime and its trust, say).
 */
export function workerPolicy(root: string, allow: readonly string[], more: readonly string[] = []) {
  return [
    'version: 1',
    'runtimes:',
    '  claude-code:',
    '    description: this machine',
    '    capabilities:',
    '      code_execution: { mode: native }',
    '  openclaw:',
    '    description: the assistant',
    '    trust: standard',
    ...more,
    'remote_execution:',
    `  allow: ${JSON.stringify(allow)}`,
    `  workdir: ${root}`,
  ].join('\n');
}

/** A hub's capabilities for task tests and benches: OpenClaw's code_execution goes to Claude Code's workers. */
export const TASK_HUB_CAPABILITIES = [
  'version: 1',
  'runtimes:',
  '  claude-code:',
  '    description: a developer terminal',
  '    capabilities:',
  '      code_execution: { mode: native }',
  '  openclaw:',
  '    description: the assistant',
  '    capabilities:',
  '      code_execution: { mode: via-api, via: remote-exec, target: claude-code }',
].join('\n');
