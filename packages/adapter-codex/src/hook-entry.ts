// The file Codex runs, on the `node` the installer pinned. It checks the Node version first
// (nothing is imported before, so an old Node fails open with one notice instead of crashing at
// import); then it turns on Node's compile cache (after the first run the hook's code is not
// compiled again) and loads the hook, a CommonJS bundle: its builtins come through require,
// where an ESM import would build each one's namespace and run its lazy getters (node:fs loads
// fs/promises, readline and more: milliseconds of CPU per hook run, measured).
// 22.3: the hook loads builtins with process.getBuiltinModule, new in 22.3.
const MIN_NODE = '22.3';
const major = Number(process.versions.node.split('.')[0]);

if (major < 22 || typeof process.getBuiltinModule !== 'function') {
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  let event = '';
  try {
    event = (JSON.parse(input) as { hook_event_name?: string }).hook_event_name ?? '';
  } catch {}
  if (event === 'SessionStart') {
    process.stdout.write(
      `${JSON.stringify({
        systemMessage: `ctxbus: no shared context: its hooks need Node.js ${MIN_NODE} or later, and \`node\` here is ${process.version}. Run \`ctxbus install codex\` again with a newer Node: it pins the Node it runs on.`,
      })}\n`,
    );
  }
} else {
  const nodeModule: typeof import('node:module') =
    process.getBuiltinModule?.('node:module') ?? (await import('node:module'));
  try {
    const { tmpdir } = process.getBuiltinModule?.('node:os') ?? (await import('node:os'));
    nodeModule.enableCompileCache?.(
      process.env.CTXBUS_COMPILE_CACHE ?? `${tmpdir()}/ctxbus-compile-cache`,
    );
  } catch {
    // an unwritable cache only costs speed
  }
  nodeModule.createRequire(import.meta.url)('./ctxbus-codex-hook-main.cjs');
}
