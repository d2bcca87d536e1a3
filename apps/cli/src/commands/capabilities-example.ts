// The capabilities file `ctxbus capabilities init` writes: this repository's capabilities.yaml
// without its first line (an editor's schema path in this repository); capabilities-init.test.ts
// holds the two equal, so a change to one is a change to both.

export const CAPABILITIES_EXAMPLE = `# capabilities.yaml: what each runtime can do, and how (seed 000, question 3).
#
# Read by core's parseCapabilities (errors name the line and column), \`ctxbus capabilities
# check\` and \`show\`, and the router: routeTask(task, matrix, presence) picks the runtime that
# does a task (native, via-api / via-mcp from the origin, a proxy to another runtime, a queue
# for an offline one, or an escalation to a human) and explains why; try
#   ctxbus route --explain '{"requiredCapabilities":["code_execution"],"origin":"openclaw"}'
# Editors check it against its JSON Schema: save \`ctxbus capabilities schema\` beside it as
# capabilities.schema.json and make this the first line:
#   # yaml-language-server: $schema=./capabilities.schema.json
#
# A runtime may also give: type, adapter, trust (trusted | standard | restricted; default
# standard; a restricted runtime never receives a proxied task, and a proxy it asks for waits
# for a human's approval), endpoint. A capability: mode, via, target (the runtime it goes
# through), limits { network, seconds, commands }, notes. Capability names beyond the five
# below are allowed.
#
# mode:
#   native       the runtime does it itself
#   via-api      it calls a service that can (with a target: the task is proxied to it)
#   via-mcp      it calls an MCP server that can (likewise)
#   sandboxed    it can, inside a sandbox with the limits given
#   unavailable  it cannot; route the task elsewhere or escalate
version: 1

runtimes:
  claude-code:
    description: Claude Code in a developer's terminal
    capabilities:
      code_execution: { mode: native, via: Bash }
      file_operations: { mode: native, via: Read/Write/Glob/Grep }
      search: { mode: native, via: Grep, notes: web search and fetch too }
      communication: { mode: via-mcp, via: slack }
      memory: { mode: via-mcp, via: ctxbus }

  openclaw:
    description: an OpenClaw assistant reached over Telegram
    capabilities:
      code_execution: { mode: via-api, via: remote-exec, target: claude-code }
      file_operations: { mode: via-api, via: ctxbus }
      search: { mode: via-mcp, via: web-search }
      communication: { mode: native, via: telegram }
      memory: { mode: via-api, via: ctxbus }

  codex:
    description: the OpenAI Codex CLI in a developer's terminal
    # Codex keeps 2,500 of its tokens of a hook's context (it spills the rest to a file): the
    # adapter asks for Markdown within 2,000.
    context: { format: markdown, tokenBudget: 2000 }
    capabilities:
      code_execution: { mode: native, via: exec_command, notes: in its sandbox (bubblewrap) }
      file_operations: { mode: native, via: apply_patch }
      search: { mode: native, via: web_search and shell search }
      communication: { mode: via-mcp, via: ctxbus }
      memory: { mode: via-mcp, via: ctxbus }

  web:
    description: the ctxbus web dashboard
    capabilities:
      code_execution:
        { mode: sandboxed, via: webcontainer, limits: { network: false, seconds: 30 } }
      file_operations: { mode: via-api, via: ctxbus }
      search: { mode: via-api, via: ctxbus }
      communication: { mode: via-api, via: hub }
      memory: { mode: native, via: ctxbus }

# Who approves commands a worker asks about: the runtimes people answer through, never an
# agent's (an agent holds its token where its own shell can read it). The hub refuses an
# approve or deny from any other runtime token, and from the task's origin or the runtime that
# runs it, even when listed here; admin tokens may always decide. Absent: cli, telegram, web.
# [] leaves approvals to admin tokens alone.
approvers: [cli, telegram, web]

# Remote execution is allow-listed and jailed: only these commands, only in this directory.
remote_execution:
  allow: ["npm test", "pnpm test", "git status"]
  workdir: ~/projects
`;
