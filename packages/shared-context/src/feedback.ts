import { CtxbusError, validationError } from '@ctxbus/core/contract';
import { z } from 'zod';
import { readTextOrNull } from './files.js';
import { AGENT_ID_PATTERN } from './paths.js';

/** One line of `feedback/inbox.jsonl` (and of the weekly `feedback/<YYYY-Www>.jsonl`). */
export const feedbackEntrySchema = z.strictObject({
  timestamp: z.iso.datetime({ offset: true }),
  /** Who gave the feedback (an agent id, or a person's handle in the same format). */
  agent: z.string().regex(AGENT_ID_PATTERN, 'an agent id'),
  verdict: z.enum(['approved', 'rejected']),
  /** What the verdict is about: a title, a decision, a proposal. */
  subject: z.string().trim().min(1).max(300),
  reason: z.string().trim().max(2_000).optional(),
  /** The output it is about, relative to the shared-context root. */
  ref: z.string().max(1_024).optional(),
  tags: z
    .array(z.string().regex(/^[^\s,]{1,64}$/))
    .max(32)
    .optional(),
});

export type FeedbackEntry = z.infer<typeof feedbackEntrySchema>;

/** Validates a feedback entry (a bad one is `validation_failed`, naming the field). */
export function parseFeedbackEntry(value: unknown): FeedbackEntry {
  const parsed = feedbackEntrySchema.safeParse(value);
  if (!parsed.success) throw validationError(parsed.error, 'feedback');
  return parsed.data;
}

/** One JSONL line of an entry, fields in the schema's order. */
export function feedbackLine(entry: FeedbackEntry): string {
  const ordered = {
    timestamp: entry.timestamp,
    agent: entry.agent,
    verdict: entry.verdict,
    subject: entry.subject,
    ...(entry.reason !== undefined && { reason: entry.reason }),
    ...(entry.ref !== undefined && { ref: entry.ref }),
    ...(entry.tags !== undefined && { tags: entry.tags }),
  };
  return `${JSON.stringify(ordered)}\n`;
}

export interface FeedbackRead {
  entries: { entry: FeedbackEntry; line: string }[];
  /** Lines that are not valid entries (skipped), 1-based. */
  invalidLines: number[];
}

/** Reads a feedback JSONL file; invalid lines are skipped and reported, never thrown. */
export function readFeedbackFile(path: string): FeedbackRead {
  const text = readTextOrNull(path) ?? '';
  const entries: FeedbackRead['entries'] = [];
  const invalidLines: number[] = [];
  text.split('\n').forEach((line, index) => {
    if (line.trim() === '') return;
    try {
      const parsed = feedbackEntrySchema.safeParse(JSON.parse(line));
      if (parsed.success) entries.push({ entry: parsed.data, line });
      else invalidLines.push(index + 1);
    } catch {
      invalidLines.push(index + 1);
    }
  });
  return { entries, invalidLines };
}

/** Throws unless `text` is a valid priorities-inbox body. */
export function assertInboxText(text: string): string {
  const body = text.replace(/\r\n/g, '\n').trim();
  if (body.length === 0 || body.length > 4_000) {
    throw new CtxbusError('validation_failed', 'a priorities-inbox entry is 1-4000 characters', {
      details: { field: 'text' },
    });
  }
  if (body.split('\n').some((line) => line.startsWith('#'))) {
    throw new CtxbusError(
      'validation_failed',
      "a priorities-inbox entry has no line starting with '#' (headings delimit entries)",
      { details: { field: 'text' } },
    );
  }
  return body;
}
