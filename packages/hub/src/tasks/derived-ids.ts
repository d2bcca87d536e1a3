import { stableId } from '@ctxbus/core';

// The ids of the items the hub writes itself, derived from what they announce so that the same
// write after a crash or on another hub is the same item (the store answers `existing`), and
// keyed with the database's secret (Store.derivedIdSecret) so that no runtime can compute one
// first: with plain derived ids, a runtime that wrote any item under the id of a task's next
// status item kept that change from ever being announced, and one under a conflict's id kept
// the conflict from ever being raised.

export interface DerivedIds {
  /** The status item that announces task event `seq`. */
  taskEvent(taskId: string, seq: number): string;
  /** The conflict item raised when `winnerId` replaced `replacedId`. */
  conflict(replacedId: string, winnerId: string): string;
  /**
   * What the team's audit log names a private item's key by: the same for the same key, and
   * neither it nor a guess of it can be read from it.
   */
  privateKey(key: string): string;
}

export function derivedIds(secret: string): DerivedIds {
  return {
    taskEvent: (taskId, seq) => stableId('ctxbus-task-event', secret, taskId, String(seq)),
    conflict: (replacedId, winnerId) => stableId('ctxbus-conflict', secret, replacedId, winnerId),
    privateKey: (key) => `private-key:${stableId('ctxbus-private-key', secret, key)}`,
  };
}

/**
 * A task event's status item id as a ctxbus before the secret wrote it: verification still
 * finds the status items of events relayed before the upgrade.
 */
export function unkeyedTaskEventItemId(taskId: string, seq: number): string {
  return stableId('ctxbus-task-event', taskId, String(seq));
}
