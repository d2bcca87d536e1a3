/**
 * What a team's bus holds when a runtime's hook asks for context: a dozen decisions with some
 * reasoning, eight tasks in progress, a blocking alert and an open request. The hook benches
 * (Claude Code, OpenClaw) time their injection against it.
 */
export function teamItems(): Record<string, unknown>[] {
  return [
    ...Array.from({ length: 12 }, (_, index) => ({
      type: 'decision',
      title: `Decision ${index}: adopt the pattern for module ${index}`,
      content: 'Reasoning that explains the trade-offs at some length. '.repeat(6),
    })),
    ...Array.from({ length: 8 }, (_, index) => ({
      type: 'status',
      title: `Task T-${index} in progress`,
      scopeKey: `task:T-${index}`,
      content: 'Halfway there.',
    })),
    { type: 'alert', title: 'CI is red on main', urgency: 'blocking' },
    { type: 'request', title: 'Approve the release notes?', urgency: 'attention' },
  ];
}
