import { readFileSync } from 'node:fs';

/** One line of the benchmark report (each section's file returns its rows). */
export interface Row {
  section: string;
  metric: string;
  value: string;
  target?: string;
  ok?: boolean;
}

/** Percentile (0-100) of a list of numbers, by nearest rank. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

export function ms(value: number): string {
  return Number.isNaN(value) ? 'n/a' : `${value < 10 ? value.toFixed(2) : value.toFixed(1)} ms`;
}

export function perSecond(count: number, elapsedMs: number): string {
  return `${Math.round((count / elapsedMs) * 1000).toLocaleString('en-US')} items/s`;
}

/** Resident memory of a process in MB, from /proc (Linux). */
export function rssMb(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]);
    return kb / 1024;
  } catch {
    return Number.NaN;
  }
}
