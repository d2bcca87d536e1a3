import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from '@ctxbus/core';
import { waitUntil } from '@ctxbus/test-kit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CapabilitiesSource } from './capabilities-source.js';

const GOOD = `version: 1
runtimes:
  claude-code:
    description: Claude Code
    capabilities:
      code_execution: { mode: native, via: Bash }
`;
const GOOD_TWO = `${GOOD}  web:
    description: the dashboard
`;
// Line 6, column 23: a mode that does not exist.
const BAD = GOOD.replace('mode: native', 'mode: nativ');

let dir: string;
let file: string;
let warnings: string[];
let sources: CapabilitiesSource[];
const logger: Logger = {
  debug() {},
  info() {},
  warn(_object, message) {
    warnings.push(message ?? '');
  },
  error() {},
};

/** Saves as editors do: a new file renamed over the old one. */
function save(text: string): void {
  const temporary = join(dir, `.capabilities.yaml.${Math.random().toString(36).slice(2)}~`);
  writeFileSync(temporary, text);
  renameSync(temporary, file);
}

async function open(options: { optional?: boolean; pollMs?: number } = {}) {
  const source = await CapabilitiesSource.open(
    { file, debounceMs: 20, pollMs: 0, ...options },
    () => new Date(),
    logger,
  );
  sources.push(source);
  return source;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ctxbus-capabilities-'));
  file = join(dir, 'capabilities.yaml');
  warnings = [];
  sources = [];
});

afterEach(() => {
  for (const source of sources) source.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('CapabilitiesSource', () => {
  it('loads the file at start and again when an editor renames a new version over it', async () => {
    writeFileSync(file, GOOD);
    const source = await open();
    const first = source.status();
    expect(first).toMatchObject({ file, status: 'loaded', runtimes: 1, error: null });
    expect(first.digest).toMatch(/^[0-9a-f]{64}$/);
    save(GOOD_TWO);
    await waitUntil(() => source.status().runtimes === 2, 'the renamed-over file to load');
    expect(Object.keys(source.matrix().runtimes)).toEqual(['claude-code', 'web']);
    expect(source.status().digest).not.toBe(first.digest);
  });

  it('warns, at each load, when an agent runtime is among the approvers (an edit that adds one too)', async () => {
    writeFileSync(file, GOOD);
    const source = await open();
    expect(warnings.filter((warning) => warning.includes('approvers'))).toEqual([]);
    save(`${GOOD}approvers: [cli, openclaw]\n`);
    await waitUntil(
      () => warnings.some((warning) => warning.includes('approvers')),
      'the edited file to load',
    );
    expect(source.matrix().approvers).toEqual(['cli', 'openclaw']);
    expect(warnings.find((warning) => warning.includes('approvers'))).toMatch(
      /lists agent runtimes as approvers \(openclaw\): their agents can release any command/,
    );
  });

  it('keeps the last good matrix on a bad edit, says where it is wrong, and clears that on a fix', async () => {
    writeFileSync(file, GOOD);
    const source = await open();
    const good = source.status();
    save(BAD);
    await waitUntil(() => source.status().error !== null, 'the bad edit to be reported');
    const failed = source.status();
    expect(failed.error?.message).toMatch(
      new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:6:\\d+: .*mode`),
    );
    expect(failed.digest).toBe(good.digest);
    expect(source.matrix().runtimes['claude-code']?.capabilities.code_execution?.mode).toBe(
      'native',
    );
    expect(warnings.some((warning) => warning.includes(':6:'))).toBe(true);
    save(GOOD_TWO);
    await waitUntil(() => source.status().runtimes === 2, 'the fixed file to load');
    expect(source.status().error).toBeNull();
  });

  it('reverting a bad edit to the text in force clears the error without a reload', async () => {
    writeFileSync(file, GOOD);
    const source = await open();
    const loadedAt = source.status().loadedAt;
    save(BAD);
    await waitUntil(() => source.status().error !== null, 'the bad edit to be reported');
    save(GOOD);
    await waitUntil(() => source.status().error === null, 'the revert to clear the error');
    expect(source.status().loadedAt).toBe(loadedAt);
  });

  it('a file removed after a good load keeps the matrix and reports it missing', async () => {
    writeFileSync(file, GOOD);
    const source = await open();
    rmSync(file);
    await waitUntil(() => source.status().error !== null, 'the removal to be reported');
    expect(source.status().error?.message).toContain('missing');
    expect(source.status().runtimes).toBe(1);
    expect(Object.keys(source.matrix().runtimes)).toEqual(['claude-code']);
  });

  it('an optional file that does not exist yet is an empty matrix, loaded once it appears', async () => {
    const source = await open({ optional: true });
    expect(source.status()).toMatchObject({ status: 'empty', runtimes: 0, error: null });
    save(GOOD);
    await waitUntil(() => source.status().status === 'loaded', 'the new file to load');
  });

  it('an optional file in a directory that does not exist yet: loaded by the timer check once both appear, one warning', async () => {
    const later = join(dir, 'later');
    file = join(later, 'capabilities.yaml');
    const source = await open({ optional: true, pollMs: 30 });
    expect(source.status()).toMatchObject({ status: 'empty', error: null });
    mkdirSync(later);
    save(GOOD);
    await waitUntil(() => source.status().status === 'loaded', 'the file to load');
    expect(warnings.filter((warning) => warning.includes('cannot watch'))).toHaveLength(1);
  });

  it('refuses to start on a missing file that is not optional', async () => {
    await expect(open()).rejects.toMatchObject({ code: 'validation_failed' });
  });

  it('starts with an empty matrix and the error when the file is bad from the start', async () => {
    writeFileSync(file, BAD);
    const source = await open();
    expect(source.status()).toMatchObject({ status: 'empty', runtimes: 0 });
    expect(source.status().error?.message).toContain(':6:');
  });

  it('a check on a timer catches a change no event announced', async () => {
    writeFileSync(file, GOOD);
    const source = await open({ pollMs: 30 });
    // Closing the watcher stands in for a file system that sends no events.
    (source as unknown as { watcher: { close(): void } | null }).watcher?.close();
    writeFileSync(file, GOOD_TWO);
    await waitUntil(() => source.status().runtimes === 2, 'the timer check to load the change');
  });

  it('close stops watching: later edits are not read', async () => {
    writeFileSync(file, GOOD);
    const closed = await open();
    closed.close();
    const watching = await open();
    save(GOOD_TWO);
    // The open source reads the edit after the same debounce the closed one would have used.
    await waitUntil(() => watching.status().runtimes === 2, 'the open source to load the edit');
    expect(closed.status().runtimes).toBe(1);
    await closed.reload();
    expect(closed.status().runtimes).toBe(1);
  });
});
