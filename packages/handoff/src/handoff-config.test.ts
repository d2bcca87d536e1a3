import { writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { removeDir, tempDir } from '@ctxbus/test-kit';
import { afterAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_HANDOFF_CONFIG,
  handoffConfigPath,
  loadHandoffConfig,
  nextModel,
  parseHandoffConfig,
} from './handoff-config.js';

const dir = tempDir('ctxbus-handoff-config-');
afterAll(() => removeDir(dir));

// The seed's config.yaml, as written there.
const SEED_CONFIG = `# ~/.config/context-bus/config.yaml

workspace: ~/clawd                # Agent workspace path

models:
  primary: opus
  secondary: codex
  tertiary: gemini

thresholds:
  switch_to_secondary: 95
  switch_back: 50
  proactive_summary: 80           # Generate summary at this %

safety:
  max_handoff_age_minutes: 5
  require_handoff_ready: true
  retry_on_incomplete: true
  max_wait_seconds: 60

notifications:
  enabled: true
  channel: telegram
  telegram:
    chat_id: ""
`;

describe('config.yaml', () => {
  it("reads the seed's file, ~ expanded", () => {
    const config = parseHandoffConfig(SEED_CONFIG);
    expect(config).toEqual({
      workspace: join(homedir(), 'clawd'),
      models: { primary: 'opus', secondary: 'codex', tertiary: 'gemini' },
      thresholds: { switch_to_secondary: 95, switch_back: 50, proactive_summary: 80 },
      safety: {
        max_handoff_age_minutes: 5,
        require_handoff_ready: true,
        retry_on_incomplete: true,
        max_wait_seconds: 60,
      },
      notifications: { enabled: true, channel: 'telegram', telegram: { chat_id: '' } },
    });
    expect(nextModel(config, 'opus')).toBe('codex');
    expect(nextModel(config, 'codex')).toBe('gemini');
    expect(nextModel(config, 'gemini')).toBeNull();
    expect(nextModel(config, 'sonnet')).toBe('codex');
  });

  it("takes the seed's values for whatever is missing, the whole file included", () => {
    const partial = parseHandoffConfig('thresholds:\n  switch_to_secondary: 90\n');
    expect(partial.thresholds).toEqual({
      switch_to_secondary: 90,
      switch_back: 50,
      proactive_summary: 80,
    });
    expect(partial.safety).toEqual(DEFAULT_HANDOFF_CONFIG.safety);
    expect(parseHandoffConfig('')).toEqual(DEFAULT_HANDOFF_CONFIG);
    expect(loadHandoffConfig(join(dir, 'absent.yaml'))).toEqual(DEFAULT_HANDOFF_CONFIG);
    expect(DEFAULT_HANDOFF_CONFIG.models).toEqual({ primary: 'opus', secondary: 'codex' });
    expect(DEFAULT_HANDOFF_CONFIG.safety.max_wait_seconds).toBe(60);
  });

  it('names the file, line and field of a bad value or an unknown key', () => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'thresholds:\n  switch_to_secondary: 150\n');
    expect(() => loadHandoffConfig(file)).toThrowError(
      `${file}:2:24: thresholds.switch_to_secondary: Too big: expected number to be <=100`,
    );
    expect(() => parseHandoffConfig('safety:\n  max_wait: 10\n')).toThrowError(
      /^config\.yaml:2:3: safety: unknown key max_wait$/,
    );
    expect(() => parseHandoffConfig('notifications:\n  channel: email\n')).toThrowError(
      /^config\.yaml:2:12: notifications\.channel: Invalid option: expected one of "bus"\|"telegram"$/,
    );
    expect(() => parseHandoffConfig('models: [opus\n')).toThrowError(/^config\.yaml:\d+:\d+: /);
    // Switching back at a usage the monitor would switch away at: back and forth.
    expect(() =>
      parseHandoffConfig('thresholds:\n  switch_to_secondary: 90\n  switch_back: 95\n'),
    ).toThrowError(
      /^config\.yaml:3:\d+: thresholds\.switch_back: switch_back must be below switch_to_secondary/,
    );
    expect(
      parseHandoffConfig('thresholds:\n  switch_to_secondary: 90\n  switch_back: 89\n').thresholds
        .switch_back,
    ).toBe(89);
    expect(() => parseHandoffConfig('safety:\n  require_handoff_ready: "yes"\n')).toThrowError(
      expect.objectContaining({
        code: 'validation_failed',
        details: { file: 'config.yaml', field: 'safety.require_handoff_ready' },
      }),
    );
  });

  it('lives in ~/.config/context-bus unless $CONTEXT_BUS_CONFIG or $XDG_CONFIG_HOME says otherwise', () => {
    expect(handoffConfigPath({ HOME: '/h' })).toBe(
      join(homedir(), '.config', 'context-bus', 'config.yaml'),
    );
    expect(handoffConfigPath({ XDG_CONFIG_HOME: '/x' })).toBe('/x/context-bus/config.yaml');
    expect(handoffConfigPath({ CONTEXT_BUS_CONFIG: '/c/my.yaml', XDG_CONFIG_HOME: '/x' })).toBe(
      '/c/my.yaml',
    );
  });
});
