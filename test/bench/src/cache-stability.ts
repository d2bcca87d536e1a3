// Prompt-cache stability (issue 29): a scripted session of N turns per runtime, each the real
// CLI (Claude Code, OpenClaw, Codex) against a real hub, its model a scripted server that logs
// every request, while another runtime writes one new item before every turn. Per runtime: the
// share of turns whose request starts with the previous turn's (target >= 98%), the tokens
// ctxbus injected per turn (p50 / max, the first turn's bundle apart), and how many new items
// reached the next turn's request (target 100%).
import { loadavg } from 'node:os';
import type { HubProcess } from '@ctxbus/test-kit';
import { runtimeToken } from '@ctxbus/test-kit';
import { claudeCodeSession } from './cache-claude-code.ts';
import { codexSession } from './cache-codex.ts';
import { openClawSession } from './cache-openclaw.ts';
import type { CacheSession, CacheTurn } from './cache-session.ts';
import { runCacheSession } from './cache-session.ts';
import type { Row } from './stats.ts';
import { percentile } from './stats.ts';

/**
 * The runtimes the section drives, by the name `CTXBUS_BENCH_CACHE_RUNTIMES` takes. OpenClaw's
 * request prefix depends on the provider (its transcript policy), so it can be driven three
 * ways: `openclaw` is what a user of OpenAI gets (OpenClaw's bundled `openai` provider, the
 * Responses API, its base URL the scripted model); `openclaw-chat` a provider of the config's
 * own on Chat Completions (a local or OpenAI-compatible server); `openclaw-responses-custom`
 * such a provider on the Responses API. The last two only when listed: an OpenClaw turn is
 * 20-60 s, and their prefix breaks the same way at every turn (adapter-openclaw's README).
 */
const RUNTIMES: Record<string, (hub: HubProcess) => Promise<CacheSession>> = {
  'claude-code': claudeCodeSession,
  openclaw: (hub) => openClawSession(hub, { provider: 'openai', api: 'openai-responses' }),
  'openclaw-chat': (hub) => openClawSession(hub, { provider: 'local', api: 'openai-completions' }),
  'openclaw-responses-custom': (hub) =>
    openClawSession(hub, { provider: 'local', api: 'openai-responses' }),
  codex: codexSession,
};
/** The runtimes driven when `CTXBUS_BENCH_CACHE_RUNTIMES` is unset. */
const DEFAULT_RUNTIMES = ['claude-code', 'openclaw', 'codex'];

const share = (count: number, of: number) =>
  `${count} / ${of} (${of === 0 ? 'n/a' : `${((100 * count) / of).toFixed(1)}%`})`;

function runtimeRows(runtime: string, turns: CacheTurn[]): Row[] {
  const compared = turns.filter((turn) => turn.verdict !== null);
  const stable = compared.filter((turn) => turn.verdict?.starts).length;
  const reached = turns.filter((turn) => turn.reached).length;
  const later = turns.slice(1).map((turn) => turn.injectedTokens);
  const first = turns[0]?.injectedTokens ?? 0;
  const misses = compared.flatMap((turn, index) =>
    turn.verdict?.starts ? [] : [`turn ${index + 2}: ${turn.verdict?.part}`],
  );
  const rows: Row[] = [
    {
      section: 'cache',
      metric: `${runtime}: turns whose request starts with the previous turn's`,
      value: share(stable, compared.length),
      target: '>= 98%',
      ok: compared.length > 0 && stable / compared.length >= 0.98,
    },
    {
      section: 'cache',
      metric: `${runtime}: tokens injected, first turn; later turns p50 / max`,
      value: `${first}; ${percentile(later, 50)} / ${later.length ? Math.max(...later) : 'n/a'}`,
    },
    {
      section: 'cache',
      metric: `${runtime}: new items in the next turn's request`,
      value: share(reached, turns.length),
      target: '100%',
      ok: reached === turns.length,
    },
  ];
  const kept = compared.filter((turn) => turn.keptVerdict !== null);
  if (kept.length > 0) {
    rows.push({
      section: 'cache',
      metric: `${runtime}: the same, less the runtime's own trailing context it does not keep`,
      value: share(kept.filter((turn) => turn.keptVerdict?.starts).length, kept.length),
    });
  }
  if (misses.length > 0) {
    rows.push({
      section: 'cache',
      metric: `${runtime}: where the prefix changed`,
      value: misses.slice(0, 3).join('; ') + (misses.length > 3 ? '; ...' : ''),
    });
  }
  return rows;
}

/** The runtimes to drive: the defaults, or those `CTXBUS_BENCH_CACHE_RUNTIMES` lists. */
export function cacheRuntimes(): string[] {
  const listed = process.env.CTXBUS_BENCH_CACHE_RUNTIMES;
  const names = listed ? listed.split(',') : DEFAULT_RUNTIMES;
  for (const name of names) {
    if (!RUNTIMES[name]) throw new Error(`CTXBUS_BENCH_CACHE_RUNTIMES: no runtime "${name}"`);
  }
  return names;
}

export async function benchCache(
  hub: HubProcess,
  turns: number,
  log: (line: string) => void,
): Promise<Row[]> {
  const rows: Row[] = [];
  const writer = await runtimeToken(hub, 'bench', 'telegram');
  for (const name of cacheRuntimes()) {
    log(`cache: ${name}, ${turns} turns`);
    const session = await (RUNTIMES[name] as (hub: HubProcess) => Promise<CacheSession>)(hub);
    try {
      const measured = await runCacheSession(hub, session, {
        turns,
        writer,
        log,
        ...(process.env.CTXBUS_BENCH_CACHE_DUMP && { dump: process.env.CTXBUS_BENCH_CACHE_DUMP }),
      });
      rows.push(...runtimeRows(session.runtime, measured));
    } finally {
      await session.close();
    }
  }
  const [one, five] = loadavg();
  rows.push({
    section: 'cache',
    metric: 'machine load (1 / 5 min)',
    value: `${one?.toFixed(2)} / ${five?.toFixed(2)}`,
  });
  return rows;
}
