import { createHash } from 'node:crypto';
import type { FSWatcher, Stats } from 'node:fs';
import { watch } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import type { CapabilitiesFile, CapabilitiesStatus, Logger } from '@ctxbus/core';
import { agentApprovers, CtxbusError, parseCapabilities } from '@ctxbus/core';

/** The largest capabilities file the hub reads (a bigger one is refused, the matrix kept). */
export const MAX_CAPABILITIES_FILE_BYTES = 1024 * 1024;

export interface CapabilitiesOptions {
  /** The capabilities.yaml to load and watch. */
  file: string;
  /**
   * A missing file means an empty matrix instead of a start error (the data directory's
   * default file, which may be created later: it is loaded when it appears).
   */
  optional?: boolean;
  /** Quiet time after the last change event before the file is read again (default 100 ms). */
  debounceMs?: number;
  /**
   * Between checks of the file's size, time and inode without any event (default 5 s; 0: off):
   * catches what directory events miss (network file systems, a symlink swapped elsewhere).
   */
  pollMs?: number;
}

const EMPTY_MATRIX: CapabilitiesFile = { version: 1, runtimes: {} };

function digestOf(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** What of a file's stat says it may have changed. */
function signatureOf(stats: Stats | null): string {
  return stats ? `${stats.ino}:${stats.size}:${stats.mtimeMs}:${stats.ctimeMs}` : 'missing';
}

/**
 * The hub's capability matrix: loaded from its file at start and again whenever the file
 * changes, without a restart. Editors save by writing a new file and renaming it over the old
 * one, so the directory is watched and its events filtered by name; events are debounced, the
 * file re-read and its contents compared. A bad edit (or a missing file) keeps the last good
 * matrix, logs why (FILE:LINE:COL) and shows it in `status().error` until a good version is
 * read. Holds one matrix, one watcher and two timers, whatever happens to the file.
 */
export class CapabilitiesSource {
  private current: CapabilitiesFile = EMPTY_MATRIX;
  private state: CapabilitiesStatus;
  /** Digest of the text last read (good or bad), 'missing', or null before the first read. */
  private lastRead: string | null = null;
  private lastSignature: string | null = null;
  private watcher: FSWatcher | null = null;
  private debounceTimer: NodeJS.Timeout | null = null;
  private pollTimer: NodeJS.Timeout | null = null;
  private reading: Promise<void> | null = null;
  private readAgain = false;
  private closed = false;
  private watchFailed = false;
  private readonly file: string | null;

  private constructor(
    private readonly options: CapabilitiesOptions | null,
    private readonly clock: () => Date,
    private readonly logger: Logger,
  ) {
    this.file = options ? resolve(options.file) : null;
    this.state = {
      file: this.file,
      status: 'empty',
      loadedAt: null,
      digest: null,
      runtimes: 0,
      error: null,
    };
  }

  /** No file: an empty matrix, for good. */
  static none(clock: () => Date, logger: Logger): CapabilitiesSource {
    return new CapabilitiesSource(null, clock, logger);
  }

  /**
   * Loads the file and starts watching it. A missing file is an error unless `optional`;
   * one that does not parse starts the hub with an empty matrix and the error in its status.
   */
  static async open(
    options: CapabilitiesOptions,
    clock: () => Date,
    logger: Logger,
  ): Promise<CapabilitiesSource> {
    const source = new CapabilitiesSource(options, clock, logger);
    const file = source.file as string;
    const stats = await stat(file).catch(() => null);
    if (!stats && !options.optional) {
      throw new CtxbusError(
        'validation_failed',
        `the capabilities file ${file} does not exist (create it, or start without --capabilities)`,
      );
    }
    if (stats && !stats.isFile()) {
      throw new CtxbusError('validation_failed', `the capabilities file ${file} is not a file`);
    }
    await source.readNow();
    source.watchDirectory();
    const pollMs = options.pollMs ?? 5_000;
    if (pollMs > 0) {
      source.pollTimer = setInterval(() => source.poll(), pollMs);
      source.pollTimer.unref();
    }
    return source;
  }

  /** The matrix in force (empty until a good file is read). */
  matrix(): CapabilitiesFile {
    return this.current;
  }

  /** Where the matrix comes from and how the last read went. */
  status(): CapabilitiesStatus {
    return { ...this.state, error: this.state.error && { ...this.state.error } };
  }

  /** Reads the file now (after pending reads), whatever the events said. */
  reload(): Promise<void> {
    if (!this.file || this.closed) return Promise.resolve();
    return this.readNow();
  }

  close(): void {
    this.closed = true;
    this.watcher?.close();
    this.watcher = null;
    if (this.debounceTimer) clearTimeout(this.debounceTimer);
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.debounceTimer = null;
    this.pollTimer = null;
  }

  private watchDirectory(): void {
    if (!this.file || this.closed || this.watcher) return;
    const name = basename(this.file);
    try {
      this.watcher = watch(dirname(this.file), { persistent: false }, (_event, changed) => {
        // Some platforms give no name: then any change in the directory may be ours.
        if (changed === null || changed.toString() === name) this.schedule();
      });
    } catch (error) {
      // Said once: the poll tries again at every tick (the directory may appear later).
      if (!this.watchFailed) {
        this.logger.warn(
          { err: error, file: this.file },
          'cannot watch the capabilities file; checking it on a timer only',
        );
      }
      this.watchFailed = true;
      return;
    }
    this.watchFailed = false;
    this.watcher.on('error', (error) => {
      // The directory went away or the watch broke: the poll re-reads, and watches again.
      this.logger.warn({ err: error, file: this.file }, 'capabilities file watch failed');
      this.watcher?.close();
      this.watcher = null;
    });
  }

  private schedule(): void {
    if (this.closed) return;
    if (this.debounceTimer) clearTimeout(this.debounceTimer);
    this.debounceTimer = setTimeout(() => {
      this.debounceTimer = null;
      void this.readNow();
    }, this.options?.debounceMs ?? 100);
    this.debounceTimer.unref();
  }

  private poll(): void {
    if (!this.file || this.closed) return;
    if (!this.watcher) this.watchDirectory();
    void stat(this.file)
      .catch(() => null)
      .then((stats) => {
        if (signatureOf(stats) !== this.lastSignature) void this.readNow();
      });
  }

  /** One read at a time; a read asked for during one runs once after it. */
  private readNow(): Promise<void> {
    if (this.reading) {
      this.readAgain = true;
      return this.reading;
    }
    this.reading = (async () => {
      do {
        this.readAgain = false;
        await this.readOnce().catch((error: unknown) =>
          this.logger.error({ err: error, file: this.file }, 'capabilities file read failed'),
        );
      } while (this.readAgain && !this.closed);
    })().finally(() => {
      this.reading = null;
    });
    return this.reading;
  }

  private async readOnce(): Promise<void> {
    const file = this.file as string;
    const stats = await stat(file).catch(() => null);
    this.lastSignature = signatureOf(stats);
    let text: string | null = null;
    let problem: string | null = null;
    if (!stats) problem = `${file}: the file is missing`;
    else if (!stats.isFile()) problem = `${file}: not a file`;
    else if (stats.size > MAX_CAPABILITIES_FILE_BYTES) {
      problem = `${file}: larger than ${MAX_CAPABILITIES_FILE_BYTES} bytes`;
    } else {
      try {
        text = await readFile(file, 'utf8');
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        problem =
          code === 'ENOENT' ? `${file}: the file is missing` : `${file}: cannot read it (${code})`;
      }
    }
    const seen = text === null ? `problem:${problem}` : digestOf(text);
    if (seen === this.lastRead) return;
    this.lastRead = seen;
    if (text === null) {
      // Never loaded and optional: no file is simply no matrix.
      if (!stats && this.options?.optional && this.state.status === 'empty') {
        this.state = { ...this.state, error: null };
        return;
      }
      this.fail(problem as string);
      return;
    }
    let matrix: CapabilitiesFile;
    try {
      matrix = parseCapabilities(text, file);
    } catch (error) {
      this.fail(CtxbusError.isInstance(error) ? error.message : String(error));
      return;
    }
    if (seen === this.state.digest) {
      // Back to the text in force (after a bad edit or a removal): nothing to swap.
      if (this.state.error) this.logger.info({ file }, 'capabilities file is good again');
      this.state = { ...this.state, error: null };
      return;
    }
    this.current = matrix;
    const runtimes = Object.keys(matrix.runtimes).length;
    this.state = {
      file,
      status: 'loaded',
      loadedAt: this.clock().toISOString(),
      digest: seen,
      runtimes,
      error: null,
    };
    this.logger.info({ file, digest: seen, runtimes }, 'capabilities loaded');
    const agents = agentApprovers(matrix);
    if (agents.length > 0) {
      this.logger.warn(
        { file, approvers: agents },
        `capabilities.yaml lists agent runtimes as approvers (${agents.join(', ')}): their agents can release any command a worker asks about; approvers are people's channels (cli, telegram, web)`,
      );
    }
  }

  private fail(message: string): void {
    this.state = { ...this.state, error: { message, at: this.clock().toISOString() } };
    this.logger.warn(
      { file: this.file, reason: message },
      `capabilities file not loaded, ${this.state.status === 'loaded' ? 'keeping the last good matrix' : 'the matrix is empty'}: ${message}`,
    );
  }
}
