import { describe, expect, it } from 'vitest';
import {
  checkCommand,
  codeRunningEntry,
  inlineEvalReason,
  parseAllowEntry,
  parseAllowList,
} from './command-policy.js';

describe('parseAllowEntry', () => {
  it('splits on whitespace and simple quotes, with nothing expanded', () => {
    expect(parseAllowEntry('npm test')).toEqual({
      source: 'npm test',
      argv: ['npm', 'test'],
      rest: false,
    });
    expect(parseAllowEntry("  git   log  '--format=%h %s'  ").argv).toEqual([
      'git',
      'log',
      '--format=%h %s',
    ]);
    expect(parseAllowEntry('echo "a  b" c').argv).toEqual(['echo', 'a  b', 'c']);
    expect(parseAllowEntry("echo ''").argv).toEqual(['echo', '']);
    expect(parseAllowEntry('ls ~/x *.ts').argv).toEqual(['ls', '~/x', '*.ts']);
    expect(parseAllowEntry('pnpm test ...')).toMatchObject({ argv: ['pnpm', 'test'], rest: true });
    expect(parseAllowEntry("echo '...'")).toMatchObject({ argv: ['echo', '...'], rest: false });
  });

  it('refuses shell operators, variables, redirections, bad quotes and a misplaced ...', () => {
    for (const bad of [
      'npm test; rm -rf /',
      'a | b',
      'a && b',
      'echo $HOME',
      'echo `id`',
      'a > f',
      'a < f',
      "echo ';'",
    ]) {
      expect(() => parseAllowEntry(bad), bad).toThrow(/contains/);
    }
    expect(() => parseAllowEntry("echo 'open")).toThrow(/unterminated/);
    expect(() => parseAllowEntry('... npm')).toThrow(/last word/);
    expect(() => parseAllowEntry('   ')).toThrow(/no command/);
    expect(() => parseAllowEntry('...')).toThrow(/no command/);
  });
});

describe('checkCommand', () => {
  const allow = parseAllowList([
    'npm test',
    'pnpm test ...',
    'git status',
    'node -e 1',
    'node ...',
    'bash ...',
    'npx ...',
  ]);

  it('allows an exact entry, and an entry ending in ... followed by anything', () => {
    expect(checkCommand(['npm', 'test'], allow)).toMatchObject({ allowed: true });
    expect(checkCommand(['pnpm', 'test'], allow)).toMatchObject({ allowed: true });
    expect(checkCommand(['pnpm', 'test', '--', '--grep', 'x'], allow)).toMatchObject({
      allowed: true,
    });
    expect(checkCommand(['git', 'status'], allow)).toMatchObject({ allowed: true });
  });

  it('refuses anything else as not_allowed: more words, fewer words, other words', () => {
    for (const argv of [
      ['npm', 'test', '--', 'x'],
      ['npm'],
      ['git', 'status', '-s'],
      ['git', 'push'],
      ['npm test'],
      ['rm', '-rf', '/'],
    ]) {
      expect(checkCommand(argv, allow), argv.join(' ')).toMatchObject({
        allowed: false,
        code: 'not_allowed',
      });
    }
    expect(checkCommand([], allow)).toMatchObject({ allowed: false, code: 'invalid_argv' });
  });

  it('refuses inline evaluation even under an entry ending in ..., unless an entry is that exact argv', () => {
    expect(checkCommand(['node', '-e', '1'], allow)).toMatchObject({ allowed: true });
    expect(checkCommand(['node', '-e', '2'], allow)).toMatchObject({
      allowed: false,
      code: 'inline_eval',
    });
    expect(checkCommand(['node', 'script.js'], allow)).toMatchObject({ allowed: true });
    expect(checkCommand(['bash', '-c', 'rm -rf ~'], allow)).toMatchObject({
      allowed: false,
      code: 'inline_eval',
    });
    expect(checkCommand(['npx', '-c', 'rm -rf ~'], allow)).toMatchObject({
      allowed: false,
      code: 'inline_eval',
    });
    expect(checkCommand(['bash', 'build.sh'], allow)).toMatchObject({ allowed: true });
  });

  it('refuses a relative program path that leaves the working directory', () => {
    const local = parseAllowList(['../outside.sh', './bin/ok.sh', 'bin/../../x']);
    expect(checkCommand(['./bin/ok.sh'], local, { cwd: '/w' })).toMatchObject({ allowed: true });
    expect(checkCommand(['../outside.sh'], local, { cwd: '/w' })).toMatchObject({
      allowed: false,
      code: 'workdir_escape',
    });
    expect(checkCommand(['bin/../../x'], local, { cwd: '/w' })).toMatchObject({
      allowed: false,
      code: 'workdir_escape',
    });
  });
});

describe('inlineEvalReason: the table', () => {
  const evaluates: string[][] = [
    ['node', '-e', 'x'],
    ['node', '--eval', 'x'],
    ['node', '--eval=x'],
    ['node', '-p', 'x'],
    ['node', '-pe', 'x'],
    ['node', '--print', 'x'],
    ['node', '--input-type=module'],
    ['/usr/bin/node', '--import', 'data:text/javascript,x'],
    ['node22', '-e', 'x'],
    ['python', '-c', 'x'],
    ['python3', '-c', 'x'],
    ['python3.12', '-Ic', 'x'],
    ['/usr/bin/python3', '-cprint(1)'],
    ['bash', '-c', 'x'],
    ['bash', '-ec', 'x'],
    ['sh', '-c', 'x'],
    ['zsh', '-c', 'x'],
    ['dash', '-c', 'x'],
    ['perl', '-e', 'x'],
    ['perl', '-le', 'x'],
    ['perl', '-E', 'x'],
    ['ruby', '-e', 'x'],
    ['php', '-r', 'x'],
    ['deno', 'eval', 'x'],
    ['bun', '-e', 'x'],
    ['bun', '--eval', 'x'],
    ['pwsh', '-c', 'x'],
    ['pwsh', '-Command', 'x'],
    ['pwsh', '-EncodedCommand', 'eA=='],
    ['env', 'ls'],
    ['env', 'FOO=1', 'node', 'x.js'],
    ['/usr/bin/env', 'python3', 'x.py'],
    ['xargs', 'rm'],
    ['sudo', 'ls'],
    ['timeout', '5', 'ls'],
    ['busybox', 'sh'],
    ['awk', 'BEGIN{system("id")}'],
    ['sed', '1e id', 'f'],
    ['find', '.', '-exec', 'rm', '{}', ';'],
    ['npx', '-c', 'rm -rf ~'],
    ['npx', '--call', 'x'],
    ['npm', 'exec', '-c', 'x'],
    ['npm', 'exec', '--call=x'],
    ['npm', 'test', '--script-shell=/bin/evil'],
    ['pnpm', 'dlx', '-c', 'x'],
    ['pnpm', 'exec', '--shell-mode', 'x'],
    ['git', '-c', 'core.pager=id', 'log'],
    ['git', 'clone', '--upload-pack=id', 'x'],
    ['git', 'rebase', '-x', 'id'],
    ['git', 'bisect', 'run', 'id'],
    ['git', 'submodule', 'foreach', 'id'],
    // From the jail probe: commands, another repository's configuration, writes anywhere.
    ['git', 'grep', '--open-files-in-pager=id > /tmp/x; true', 'id'],
    ['git', 'grep', '-Oid', 'x'],
    ['git', 'log', '-1', '--output=/tmp/outside'],
    ['git', 'diff', '--output', '/tmp/outside'],
    ['git', 'clone', '-u', 'sh -c id', 'repo', 'dir'],
    ['git', 'fetch', '-u', 'id', 'origin'],
    ['git', 'difftool', '-x', 'id'],
    ['git', 'difftool', '--extcmd=id'],
    ['git', '-C', '/', 'status'],
    ['git', '--git-dir=/x/.git', 'status'],
    ['git', '--work-tree', '/', 'status'],
    ['git', 'format-patch', '-o', '/tmp/outside', 'HEAD~1'],
    ['git', 'archive', '-o', '/tmp/outside.tar', 'HEAD'],
    ['tar', '-cf', '/dev/null', 'x', '--checkpoint=1', '--checkpoint-action=exec=id'],
    ['tar', '-xf', 'x.tar', '--to-command=sh'],
    ['tar', '-I', 'sh -c id', '-xf', 'x.tar'],
    ['tar', '-xIsh', 'x.tar'],
    ['tar', '--use-compress-program=id', '-xf', 'x.tar'],
    // From the second jail probe: abbreviations (getopt_long and git take any unambiguous
    // prefix), clusters, an old-style tar cluster, sort, find's writers, ripgrep's --pre.
    ['tar', '--checkpoint=1', '--checkpoint-act=exec=id', '-cf', '/dev/null', '.'],
    ['tar', 'cIf', 'id;:', '/dev/null', '.'],
    ['tar', '--to-comm=sh', '-xf', 'x.tar'],
    ['tar', '--use-compress-prog=/x', '-xf', 'x.tar'],
    ['tar', '--info-scr=x', '-cf', 'y', '.'],
    ['tar', '--new-vol=x', '-cf', 'y', '.'],
    ['tar', '--rsh-comm=x', '-cf', 'host:y', '.'],
    ['git', 'grep', '--open-files-in-pag=id;:', 'hello'],
    ['git', 'grep', '-iOid;:', 'hello'],
    ['git', 'grep', '-3Otouch /tmp/x;', 'hello'],
    ['git', 'clone', '-qu', 'id', 'repo'],
    ['git', 'log', '--outp=/tmp/x'],
    ['git', 'archive', '--exe=id', '--remote=x', 'HEAD'],
    ['git', '--git-d=/x/.git', 'status'],
    ['git', 'apply', '--unsafe-paths', '--directory=/x/.git', 'p.diff'],
    ['git', 'apply', '--unsafe', 'p.diff'],
    ['sort', '-S', '1K', '--compress-program=sh', '-o', '/dev/null', 'x'],
    ['sort', '--compress-p=sh', 'x'],
    ['sort', '-o', '/outside/file', 'x'],
    ['sort', '-no/outside/file', 'x'],
    ['sort', '--outp=/outside/file', 'x'],
    ['find', '.', '-fprintf', '/outside/x', '%p'],
    ['find', '.', '-delete'],
    ['rg', '--pre', 'sh', 'x'],
    ['rg', '--pre=./x.sh', 'x'],
    ['npm', 'test', '--script-sh=/bin/evil'],
    ['npm', 'test', '--node-opt=--require=/tmp/x.js'],
    ['python3', '-m', 'pytest', '-p', 'evil_plugin'],
    ['python3', '-m', 'pytest', '--junitxml=/etc/x'],
    ['python3', '-m', 'pytest', '--rootdir=/elsewhere', 'tests'],
    ['pytest', '--basetemp=/home/me/project'],
    ['pytest', '--doctest-gl=*.bin', '-o', 'doctest_encoding=latin-1'],
    ['make', '--eval=x:', 'x'],
    // The review's bypasses, and options that load a file the command line names.
    ['perl', '-M5;system("id")', '/dev/null'],
    ['perl', '-mPOSIX', 'x.pl'],
    ['node', '--env-file-if-exists=/tmp/other-team/.env', '/dev/null'],
    ['node', '--env-file=.env', 'x.js'],
    ['node', '-r', './setup.js', 'x.js'],
    ['node', '--require=./x.js', 'y.js'],
    ['node', '--import', './hook.mjs', 'x.js'],
    ['node', '--loader', './l.mjs', 'x.js'],
    ['node', '--experimental-loader=./l.mjs', 'x.js'],
    ['node', 'x.js', '-r', './later.js'],
    ['ruby', '-rsocket', 'x.rb'],
    ['ruby', '--require=x', 'x.rb'],
    ['php', '-d', 'auto_prepend_file=/tmp/x.php', 'x.php'],
    ['php', '-c', '/tmp/php.ini', 'x.php'],
    ['npm', 'test', '--node-options=--require=/tmp/x.js'],
    ['pnpm', 'test', '--node-options', '--import=/tmp/x.mjs'],
  ];
  for (const argv of evaluates) {
    it(`refuses ${JSON.stringify(argv)}`, () => {
      expect(inlineEvalReason(argv)).toEqual(expect.any(String));
    });
  }
  const plain: string[][] = [
    ['node', 'script.js'],
    ['node', '--test'],
    ['python3', 'x.py'],
    ['python3', '-m', 'pytest'],
    ['bash', 'build.sh'],
    ['bash', '-x', 'build.sh'],
    ['npm', 'test'],
    ['npm', 'run', 'build'],
    ['npx', 'vitest', 'run'],
    ['pnpm', 'test'],
    ['pnpm', 'exec', 'vitest'],
    ['git', 'status'],
    ['git', 'log', '-p'],
    ['git', 'push', '-u', 'origin', 'x'],
    ['git', 'add', '-u'],
    ['git', 'diff', '-C', 'HEAD~1'],
    ['git', 'commit', '-C', 'HEAD', '--amend'],
    ['git', 'log', '--oneline'],
    ['tar', '-czf', 'out.tar.gz', 'src'],
    ['tar', '-xf', 'x.tar'],
    ['tar', 'czf', 'out.tar.gz', 'src'],
    ['sort', '-n', '-k2', 'x'],
    ['sort', '--numeric-sort', 'x'],
    ['git', 'grep', '-i', 'hello'],
    ['git', 'log', '--oneline', '--format=%h'],
    ['git', 'clone', '-q', 'repo'],
    ['git', 'apply', '--check', 'p.diff'],
    ['git', 'ls-files', '--directory'],
    ['find', '.', '-name', '*.ts', '-print'],
    ['rg', '-n', 'hello'],
    ['npm', 'test', '--silent'],
    ['python3', '-m', 'pytest', '-q', 'tests/test_x.py', '-k', 'name'],
    ['pytest', '-x', '-vv'],
    ['ls', '-c'],
    ['deno', 'test'],
  ];
  for (const argv of plain) {
    it(`leaves ${JSON.stringify(argv)} to the allow-list`, () => {
      expect(inlineEvalReason(argv)).toBeNull();
    });
  }
});

describe('entries that are permission to run code', () => {
  const codeRunning = [
    'python3 ...',
    'python3 -m ...',
    'python3 -X dev ...',
    'node ...',
    'node --test ...',
    'perl ...',
    'bash ...',
    'sh -x ...',
    'make ...',
    'make test ...',
    'cmake ...',
    // Any other program's free arguments are all its options (the third jail probe: tar -xf
    // /proc/self/cmdline, npm --prefix, cargo --config, go test -exec, pytest @file).
    'python3 -m pytest ...',
    // A package runner's or -S's first word is a tool, not a script (the fourth probe: npx
    // vitest run --execArgv=--import=data:...).
    'npx vitest ...',
    'npx jest ...',
    'bun test ...',
    'deno test ...',
    'ruby -S rake ...',
    'perl -S prove ...',
    'npm test ...',
    'pnpm test ...',
    'git log ...',
    'git grep ...',
    'tar ...',
    'sort ...',
    'cargo test ...',
    'go test ...',
    'ls ...',
  ];
  for (const source of codeRunning) {
    it(`"${source}" lets its program run code given in the free arguments`, () => {
      expect(codeRunningEntry(parseAllowEntry(source))).toEqual(expect.any(String));
    });
  }
  const bounded = [
    'python3 tools/check.py ...',
    'node scripts/check.js ...',
    'bash build.sh ...',
    'python3 -m timeit',
    'make test',
    'npm test',
    'git status',
  ];
  for (const source of bounded) {
    it(`"${source}" passes its free arguments to a script it names, or takes none`, () => {
      expect(codeRunningEntry(parseAllowEntry(source))).toBeNull();
    });
  }

  it("the review's bypasses are allowed only as code-running: python3 -m timeit, make SHELL=", () => {
    const allow = parseAllowList(['python3 ...', 'make ...']);
    const timeit = checkCommand(
      ['python3', '-m', 'timeit', '__import__("os").system("id")'],
      allow,
    );
    expect(timeit).toMatchObject({ allowed: true, runsCode: expect.stringContaining('python') });
    const make = checkCommand(
      ['make', 'SHELL=/bin/sh', 'X:=$(shell id)', '-f', '/dev/null'],
      allow,
    );
    expect(make).toMatchObject({ allowed: true, runsCode: expect.stringContaining('make') });
  });

  it('an entry that is no permission to run code wins over one that is', () => {
    const allow = parseAllowList(['python3 ...', 'python3 tools/check.py ...']);
    const decision = checkCommand(['python3', 'tools/check.py', '-q'], allow);
    expect(decision).toMatchObject({
      allowed: true,
      entry: { source: 'python3 tools/check.py ...' },
    });
    expect(decision.allowed && decision.runsCode).toBeUndefined();
    // An exact entry wins over an entry ending in ...: it runs outside the sandbox.
    const exact = checkCommand(['npm', 'test'], parseAllowList(['npm test ...', 'npm test']));
    expect(exact.allowed && exact.runsCode).toBeUndefined();
    const free = checkCommand(
      ['npm', 'test', '--prefix=/elsewhere'],
      parseAllowList(['npm test ...']),
    );
    expect(free.allowed && free.runsCode).toMatch(/every option it has/);
  });
});
