// Search statistics are kept per visibility partition, so that a search's scores and results
// depend only on items its caller may see: a team's shared items form one partition, and each
// runtime's private items in a team another. A viewer sees two: its team's, and its own.

/** An item's partition within its team: the runtime for a private item, '' for a shared one. */
export function partitionRuntime(visibility: string, sourceRuntime: string): string {
  return visibility === 'private' ? sourceRuntime : '';
}

/** The partitions (within its team) whose items a viewer of `runtime` may see. */
export function visiblePartitionRuntimes(runtime: string): [string, string] {
  return ['', runtime];
}
