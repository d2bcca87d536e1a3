import { sha256Hex } from '../shared/canonical-hash.js';
import { canonicalJson } from '../shared/canonical-json.js';

/** A command as an approval binds it: argv, the directory, the script it runs. */
export interface CommandIdentity {
  argv: readonly string[];
  cwd: string;
  /** SHA-256 of the script file the command runs (scriptHashFor in @ctxbus/exec), or null. */
  scriptHash: string | null;
}

/**
 * Hex SHA-256 of the canonical JSON of { argv, cwd, scriptHash }: what a person's approval is
 * bound to. One rule for the hub (which stores and signs it), the worker (which recomputes it
 * before it runs) and a runtime's permission hook (which checks an answer is for its command).
 */
export function commandDigest(command: CommandIdentity): string {
  return sha256Hex(
    canonicalJson({ argv: [...command.argv], cwd: command.cwd, scriptHash: command.scriptHash }),
  );
}
