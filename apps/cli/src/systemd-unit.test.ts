import { describe, expect, it } from 'vitest';
import {
  quoteSystemdWord,
  renderServiceUnit,
  serviceUnitPath,
  splitSystemdCommandLine,
  unitEnvironment,
  unitExecStart,
  unitHubUrl,
} from './systemd-unit.js';

const AWKWARD = [
  'plain',
  '/path with spaces/bin.js',
  'a "quoted" word',
  "it's",
  'back\\slash',
  '100%',
  '%h',
  '$HOME',
  '$$',
  'tab\there',
  'new\nline',
  '',
  ';',
  'ünïcödé',
  '--retain=status=30d,alert=30d',
];

describe('systemd quoting', () => {
  it('splits command lines as systemd documents them', () => {
    expect(splitSystemdCommandLine(`/bin/sh -c 'dmesg | tac'`)).toEqual([
      '/bin/sh',
      '-c',
      'dmesg | tac',
    ]);
    expect(splitSystemdCommandLine('/usr/bin/printf "%%s\\n" "$$HOME" a\\sb  "\\x41"')).toEqual([
      '/usr/bin/printf',
      '%s\n',
      '$HOME',
      'a b',
      'A',
    ]);
    expect(() => splitSystemdCommandLine('/bin/echo %h')).toThrow(/specifier %h/);
    expect(() => splitSystemdCommandLine('/bin/echo $HOME')).toThrow(/variable \$H/);
    expect(() => splitSystemdCommandLine('/bin/echo "open')).toThrow(/unterminated/);
  });

  it('quotes any word so that systemd reads it back unchanged', () => {
    const line = AWKWARD.map((word) => quoteSystemdWord(word, 'command')).join(' ');
    expect(splitSystemdCommandLine(line)).toEqual(AWKWARD);
    expect(quoteSystemdWord('/usr/bin/node', 'command')).toBe('/usr/bin/node');
    expect(quoteSystemdWord('/a b/c', 'command')).toBe('"/a b/c"');
    expect(quoteSystemdWord('$x%', 'command')).toBe('"$$x%%"');
    expect(quoteSystemdWord('X=$x%', 'environment')).toBe('"X=$x%%"');
  });
});

describe('the service unit', () => {
  const unit = {
    execStart: ['/opt/node 24/bin/node', '/home/me/ctx bus/bin.js', 'serve', '--port', '7421'],
    environment: [
      ['CTXBUS_CONFIG_DIR', '/home/me/my $config'],
      ['CTXBUS_RETAIN', 'status=30d'],
    ] as Array<[string, string]>,
  };

  it('is a unit with an absolute command, restarts on failure and is wanted by default.target', () => {
    const text = renderServiceUnit(unit);
    const lines = text.split('\n');
    for (const line of [
      '[Unit]',
      '[Service]',
      'Restart=on-failure',
      '[Install]',
      'WantedBy=default.target',
    ]) {
      expect(lines).toContain(line);
    }
    expect(lines.indexOf('[Service]')).toBeLessThan(lines.findIndex((l) => l.startsWith('Exec')));
    expect(lines.filter((line) => line.startsWith('ExecStart='))).toHaveLength(1);
    expect(unitExecStart(text)).toEqual(unit.execStart);
    expect(unitEnvironment(text)).toEqual(unit.environment);
    expect(() => renderServiceUnit({ ...unit, execStart: ['node', 'bin.js'] })).toThrow(/absolute/);
    expect(() => renderServiceUnit({ ...unit, execStart: ['/a "b"/node', 'bin.js'] })).toThrow(
      /systemd cannot run a program whose path holds quotes/,
    );
  });

  it('tells the URL its hub serves on', () => {
    expect(unitHubUrl(unit.execStart)).toBe('http://127.0.0.1:7421');
    expect(unitHubUrl(['/n', 'b', 'serve', '--port=8080', '--host', '0.0.0.0'])).toBe(
      'http://127.0.0.1:8080',
    );
    expect(unitHubUrl(['/n', 'b', 'serve', '-p', '9000', '--host', '::1'])).toBe(
      'http://[::1]:9000',
    );
    expect(unitHubUrl(['/n', 'b', 'serve', '--port', '0'])).toBeNull();
  });

  it('lives in $XDG_CONFIG_HOME/systemd/user, else ~/.config/systemd/user', () => {
    expect(serviceUnitPath({ XDG_CONFIG_HOME: '/x/conf' })).toBe(
      '/x/conf/systemd/user/ctxbus.service',
    );
    expect(serviceUnitPath({ XDG_CONFIG_HOME: '' })).toMatch(
      /\/\.config\/systemd\/user\/ctxbus\.service$/,
    );
  });
});
