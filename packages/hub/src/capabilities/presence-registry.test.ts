import { CtxbusError } from '@ctxbus/core';
import { afterEach, describe, expect, it } from 'vitest';
import { PresenceRegistry } from './presence-registry.js';

let now = Date.parse('2026-01-01T00:00:00.000Z');
const clock = () => new Date(now);
const registries: PresenceRegistry[] = [];

function registry(maxInstancesPerTeam?: number): PresenceRegistry {
  const created = new PresenceRegistry(clock, {
    sweepIntervalMs: 0,
    ...(maxInstancesPerTeam !== undefined && { maxInstancesPerTeam }),
  });
  registries.push(created);
  return created;
}

afterEach(() => {
  for (const created of registries.splice(0)) created.close();
  now = Date.parse('2026-01-01T00:00:00.000Z');
});

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    return CtxbusError.isInstance(error) ? error.code : 'not a CtxbusError';
  }
  return undefined;
}

describe('PresenceRegistry', () => {
  it('keeps an announced instance until its time to live runs out, and a renewal extends it', () => {
    const presence = registry();
    const first = presence.announce('acme', 'claude-code', {
      instanceId: 'laptop-1',
      kind: 'worker',
      capabilities: ['code_execution', 'code_execution'],
      ttlSeconds: 30,
    });
    expect(first.expiresAt).toBe('2026-01-01T00:00:30.000Z');
    expect(presence.instances('acme')).toEqual([
      {
        instanceId: 'laptop-1',
        runtime: 'claude-code',
        kind: 'worker',
        capabilities: ['code_execution'],
        capacity: 1,
        lastSeen: '2026-01-01T00:00:00.000Z',
        expiresAt: '2026-01-01T00:00:30.000Z',
      },
    ]);
    now += 20_000;
    presence.announce('acme', 'claude-code', {
      instanceId: 'laptop-1',
      kind: 'worker',
      ttlSeconds: 30,
    });
    now += 20_000;
    expect(presence.instances('acme').map((entry) => entry.expiresAt)).toEqual([
      '2026-01-01T00:00:50.000Z',
    ]);
    now += 10_000;
    expect(presence.instances('acme')).toEqual([]);
    expect(presence.size).toBe(0);
  });

  it('summarises per runtime as the router reads it: online, workers, summed capacity', () => {
    const presence = registry();
    presence.announce('acme', 'claude-code', { instanceId: 'w1', kind: 'worker', ttlSeconds: 30 });
    presence.announce('acme', 'claude-code', {
      instanceId: 'w2',
      kind: 'worker',
      capacity: 4,
      ttlSeconds: 30,
    });
    presence.announce('acme', 'openclaw', { instanceId: 'bot', kind: 'adapter', ttlSeconds: 30 });
    expect(presence.summary('acme')).toEqual({
      'claude-code': { online: true, workers: 2, capacity: 5 },
      openclaw: { online: true, workers: 0, capacity: 0 },
    });
  });

  it('keeps teams apart: same instance ids, separate lists, separate limits', () => {
    const presence = registry(1);
    presence.announce('acme', 'web', { instanceId: 'one', kind: 'adapter', ttlSeconds: 30 });
    presence.announce('globex', 'web', { instanceId: 'one', kind: 'worker', ttlSeconds: 30 });
    expect(presence.instances('acme').map((entry) => entry.kind)).toEqual(['adapter']);
    expect(presence.instances('globex').map((entry) => entry.kind)).toEqual(['worker']);
    expect(presence.leave('globex', 'web', 'one')).toBe(true);
    expect(presence.instances('acme')).toHaveLength(1);
  });

  it('refuses a new instance past the team limit (limit_reached) but renews existing ones', () => {
    const presence = registry(2);
    presence.announce('acme', 'web', { instanceId: 'a', kind: 'adapter', ttlSeconds: 5 });
    presence.announce('acme', 'web', { instanceId: 'b', kind: 'adapter', ttlSeconds: 30 });
    expect(
      codeOf(() =>
        presence.announce('acme', 'web', { instanceId: 'c', kind: 'adapter', ttlSeconds: 30 }),
      ),
    ).toBe('limit_reached');
    expect(
      codeOf(() =>
        presence.announce('acme', 'web', { instanceId: 'b', kind: 'adapter', ttlSeconds: 30 }),
      ),
    ).toBeUndefined();
    // An expired one no longer counts.
    now += 5_000;
    expect(
      codeOf(() =>
        presence.announce('acme', 'web', { instanceId: 'c', kind: 'adapter', ttlSeconds: 30 }),
      ),
    ).toBeUndefined();
  });

  it("never lets a runtime renew or remove another runtime's instance", () => {
    const presence = registry();
    presence.announce('acme', 'claude-code', { instanceId: 'x', kind: 'worker', ttlSeconds: 30 });
    expect(
      codeOf(() =>
        presence.announce('acme', 'openclaw', { instanceId: 'x', kind: 'worker', ttlSeconds: 30 }),
      ),
    ).toBe('conflict');
    expect(presence.leave('acme', 'openclaw', 'x')).toBe(false);
    expect(presence.instances('acme').map((entry) => entry.runtime)).toEqual(['claude-code']);
    expect(presence.leave('acme', 'claude-code', 'x')).toBe(true);
    expect(presence.leave('acme', 'claude-code', 'x')).toBe(false);
  });

  it('sweeps expired entries of teams nobody reads (memory stays bounded)', () => {
    const presence = registry();
    for (let index = 0; index < 50; index++) {
      presence.announce(`team-${index}`, 'web', {
        instanceId: 'i',
        kind: 'adapter',
        ttlSeconds: 1,
      });
    }
    expect(presence.size).toBe(50);
    now += 1_000;
    presence.sweep();
    expect(presence.size).toBe(0);
  });
});
